"""The machine a measurement ran on: CPU, its vector features, cores, OS and library versions."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from dataclasses import dataclass

from core.i18n import N_
from core.notes import Note, note

__all__ = ["THREADS_NOTE", "Environment", "cpu_description", "default_threads", "environment"]

# how a run set its threads: a note in the run's environment, said in its reader's language where it is shown
THREADS_NOTE = N_(
    "intra-op threads {threads} for both engines (torch.set_num_threads and SessionOptions.intra_op_num_threads); "
    "inter-op 1, sequential execution"
)


@dataclass(kw_only=True)
class Environment:
    machine: str  # host name, to tell machines apart in the history
    cpu: str
    physical_cores: int
    logical_cores: int
    os: str
    python: str
    versions: dict[str, str]
    cpu_flags: list[str]  # the ones that matter for speed: avx2, avx512f, avx512_vnni, amx...
    threads_note: Note | None = None  # how the threads were set (None where nothing was said)
    target: str = ""  # the cluster target it ran on (core.jobs.cluster); "" for the app's own server

    @property
    def place(self) -> str:
        """Where it ran, as the history tells places apart: the target's name, else the host name."""
        return self.target or self.machine


_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "neon")


def default_threads() -> int:
    """Intra-op threads a measurement uses unless told otherwise: every core but one, which is left to the
    server, the browser and the system. On two cores that is one thread: repeated TinyCNN benchmarks then agree
    within ±2 %, where two threads (ORT's and PyTorch's pools fighting the rest of the machine for the last
    core) spread ±50 % (benchmarks/bench_spread.py)."""
    import os

    return max(1, (os.cpu_count() or 1) - 1)


def cpu_description() -> tuple[str, list[str]]:
    """This machine's CPU model and the vector features of it that matter for speed (from /proc/cpuinfo)."""
    cpu, flags = platform.processor() or platform.machine(), list[str]()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and cpu in ("", platform.machine(), platform.processor()):
                    cpu = value.strip()
                elif key.strip() in ("flags", "Features") and not flags:
                    present = set(value.split())
                    flags = [f for f in _FLAGS if f in present]
    except OSError:
        pass
    return cpu, flags


def _torch_version() -> str | None:
    """PyTorch's version: the module's when it is imported, else the installed package's, read from its metadata.
    Importing torch to read it would cost 1.5-3 CPU-seconds, which a benchmark of an ONNX model does not need."""
    module = sys.modules.get("torch")
    if module is not None:
        return str(module.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(threads: list[int] | None = None, torch: bool = True) -> Environment:
    """This machine; ``torch``: with PyTorch's version (installed; torch is not imported for it)."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    import psutil

    cpu, flags = cpu_description()
    versions = {"python": platform.python_version(), "onnx": onnx.__version__, "onnxruntime": ort.__version__}
    versions["numpy"] = np.__version__
    version = _torch_version() if torch else None
    if version:
        versions["torch"] = version
    return Environment(
        machine=platform.node(),
        cpu=cpu,
        physical_cores=psutil.cpu_count(logical=False) or 1,
        logical_cores=psutil.cpu_count(logical=True) or 1,
        os=platform.platform(),
        python=platform.python_version(),
        versions=versions,
        cpu_flags=flags,
        threads_note=note(THREADS_NOTE, threads=", ".join(map(str, threads))) if threads else None,
    )
