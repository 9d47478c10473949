"""What a machine is made of, as a cluster target shows it: CPU, vector features, cores, memory, GPUs and the
execution providers its onnxruntime build has. Run as a job (``cluster.hardware``) on the machine it describes."""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import dataclass, field

__all__ = ["Hardware", "HardwareRequest", "describe_hardware"]


@dataclass(frozen=True, kw_only=True)
class HardwareRequest:
    """Nothing to choose: the machine the job runs on describes itself."""


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """One node's hardware and software, as a target shows it."""

    host: str
    arch: str
    cpu: str
    cpu_flags: list[str]
    physical_cores: int
    logical_cores: int
    memory_gb: float
    providers: list[str]  # ONNX Runtime's execution providers in this node's build
    gpus: list[str] = field(default_factory=list)
    onnxruntime: str = ""

    @property
    def summary(self) -> str:
        """One line: CPU, features, cores, memory and GPUs."""
        flags = f" ({', '.join(self.cpu_flags)})" if self.cpu_flags else ""
        gpus = (
            f", {len(self.gpus)} GPU{'s' if len(self.gpus) != 1 else ''}: {', '.join(self.gpus)}" if self.gpus else ""
        )
        return (
            f"{self.cpu}{flags}, {self.physical_cores} cores ({self.logical_cores} logical), "
            f"{self.memory_gb:.0f} GB{gpus}"
        )


def _gpus() -> list[str]:
    """The NVIDIA GPUs ``nvidia-smi`` lists (none where it is absent)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.decode(errors="replace").splitlines() if line.strip()]


def describe_hardware(request: HardwareRequest) -> Hardware:
    """This machine (imports onnxruntime, opens no model)."""
    import onnxruntime as ort
    import psutil

    from core.runtime.machine import cpu_description

    cpu, flags = cpu_description()
    return Hardware(
        host=platform.node(),
        arch=platform.machine(),
        cpu=cpu,
        cpu_flags=flags,
        physical_cores=psutil.cpu_count(logical=False) or 1,
        logical_cores=psutil.cpu_count(logical=True) or 1,
        memory_gb=psutil.virtual_memory().total / 2**30,
        providers=list(ort.get_available_providers()),
        gpus=_gpus(),
        onnxruntime=ort.__version__,
    )
