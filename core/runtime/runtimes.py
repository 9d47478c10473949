"""Runtimes: the builds of ONNX Runtime this machine has, each in a Python environment of its own.

``default`` is the app's own ``onnxruntime`` (the interpreter the app runs). Another build cannot share that
environment (``onnxruntime-openvino`` and ``onnxruntime-gpu`` are each a whole ONNX Runtime, package
``onnxruntime``), so ``make runtime-NAME`` builds ``.runtimes/NAME``: a virtual environment holding that build alone,
whose ``.pth`` file adds the app's environment after it, so it imports its own ``onnxruntime`` and everything else
(numpy, onnx, msgspec, the project) from the app's (no second 1.6 GB install). A runtime is there once its
folder holds ``.ready`` (written by the Makefile when the build imports).

A job asks for a runtime by name (the ``runtime`` of its request); its worker starts from that runtime's Python in
the same sandbox (core.jobs.sandbox, core.jobs.view show its environment read-only). What a runtime offers (its
version, providers, devices) is known only to its own Python: ``describe`` asks it in a process of its own
(core.runtime.probe) once per process. On a cluster target, the runtimes are the node's own (its checkout's
``.runtimes``).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import RuntimeNotFound
from core.settings import PROJECT_ROOT

__all__ = [
    "BUILDS",
    "DEFAULT",
    "RUNTIMES_DIR",
    "Build",
    "PluginDevices",
    "Runtime",
    "RuntimeChoice",
    "RuntimeInfo",
    "asked_runtime",
    "describe",
    "installed_runtimes",
    "runtime_named",
    "runtime_names",
]

DEFAULT = "default"
RUNTIMES_DIR = PROJECT_ROOT / ".runtimes"
READY = ".ready"  # written by the Makefile once the runtime's onnxruntime imports
PROBE_TIMEOUT_S = 120.0  # a first import of a GPU build loads a gigabyte of CUDA libraries


@dataclass(frozen=True, kw_only=True)
class Build:
    """A runtime the Makefile builds (``make runtime-NAME`` from ``requirements-NAME.txt``)."""

    name: str
    package: str  # the ONNX Runtime build on the registry
    gpu: bool = False  # its workers are shown the NVIDIA devices (core.jobs.view)


# one row per build the Makefile knows; another runtime is a requirements-NAME.txt and a row here (README)
BUILDS: dict[str, Build] = {
    build.name: build
    for build in (
        Build(name="openvino", package="onnxruntime-openvino"),
        Build(name="gpu", package="onnxruntime-gpu", gpu=True),
    )
}


@dataclass(frozen=True, kw_only=True)
class RuntimeChoice:
    """What a request for a job that runs a model on a runtime says of where it runs (Benchmark's, Profile's and
    Tune's requests are each one, with these fields as their own in the job's JSON): ``runtime``, the build whose
    Python the job's worker starts from (``asked_runtime``); ``providers``, the execution providers asked of that
    build, as the request uses them (None: the job's default, from the build's own); ``strict``: a provider that
    takes no node, or leaves nodes to the CPU provider, is not taken for one that ran the model."""

    runtime: str = DEFAULT
    providers: list[str] | None = None
    strict: bool = False


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """Where a runtime is: its interpreter and its environment's folder ("" for the default, the app's own)."""

    name: str
    python: str
    root: str = ""
    gpu: bool = False


@dataclass(frozen=True, kw_only=True)
class PluginDevices:
    """A plugin EP package of a runtime (``onnxruntime-ep-*``), registered, and the devices it offers, or why none."""

    package: str
    devices: list[dict[str, str]] = field(default_factory=list)
    why_none: str = ""


@dataclass(frozen=True, kw_only=True)
class RuntimeInfo:
    """What a runtime's own Python says it offers (core.runtime.probe)."""

    name: str
    onnxruntime: str  # its version; "" when it does not import (``error`` says why)
    package: str = ""  # the distribution that provides it: onnxruntime, onnxruntime-openvino, onnxruntime-gpu
    providers: list[str] = field(default_factory=list)
    devices: list[dict[str, str]] = field(default_factory=list)  # get_ep_devices(): ep, type, vendor
    plugins: list[PluginDevices] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # the folders its Python reads
    torch_imported: bool = False  # importing its onnxruntime imported torch
    error: str = ""


def _runtime(folder: Path) -> Runtime | None:
    python = folder / "bin" / "python"
    if not (folder / READY).is_file() or not python.exists():
        return None
    build = BUILDS.get(folder.name)
    return Runtime(name=folder.name, python=str(python), root=str(folder), gpu=build is not None and build.gpu)


def installed_runtimes() -> list[Runtime]:
    """The default runtime and every runtime built on this machine (``make runtime-NAME``), by name."""
    found = [Runtime(name=DEFAULT, python=sys.executable)]
    if RUNTIMES_DIR.is_dir():
        for folder in sorted(RUNTIMES_DIR.iterdir()):
            runtime = _runtime(folder) if folder.is_dir() and not folder.name.startswith(".") else None
            if runtime is not None and runtime.name != DEFAULT:
                found.append(runtime)
    return found


def runtime_names() -> list[str]:
    return [runtime.name for runtime in installed_runtimes()]


def asked_runtime(request: object) -> str:
    """The runtime a job's request names (the ``runtime`` field of the requests of jobs that run models), else the
    default."""
    asked = getattr(request, "runtime", DEFAULT)
    return asked if isinstance(asked, str) and asked else DEFAULT


def runtime_named(name: str) -> Runtime:
    """The runtime called ``name`` on this machine; a name it does not have is refused, naming those it has and how
    to build the one asked for."""
    if name == DEFAULT or not name:
        return Runtime(name=DEFAULT, python=sys.executable)
    runtime = _runtime(RUNTIMES_DIR / name) if name.replace("-", "").replace("_", "").isalnum() else None
    if runtime is not None:
        return runtime
    here = ", ".join(runtime_names())
    build = (
        f"`make runtime-{name}` builds it"
        if name in BUILDS
        else f"the runtimes the Makefile builds are {', '.join(BUILDS)} (make runtime-NAME)"
    )
    raise RuntimeNotFound(f"There is no runtime {name!r} on this machine (it has: {here}); {build}.")


def _probe_environment() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(PROJECT_ROOT), "LANG": "C.UTF-8"}
    env["HOME"] = os.environ.get("HOME", "/tmp")
    return env


_ASKING = threading.Lock()
_ASKED: dict[str, threading.Lock] = {}  # a lock per runtime: a second caller waits for the first one's answer


def describe(name: str) -> RuntimeInfo:
    """What runtime ``name`` offers, asked of its own Python once per process (its onnxruntime, providers, devices,
    plugin EPs); a runtime that does not answer is described by its error, never raised. Callers in threads at
    once (the server describing its runtimes as it starts, and a page) share one answer."""
    with _ASKING:
        lock = _ASKED.setdefault(name, threading.Lock())
    with lock:
        return _describe(name)


@functools.cache
def _describe(name: str) -> RuntimeInfo:
    import msgspec

    runtime = runtime_named(name)
    command = [runtime.python, "-m", "core.runtime.probe"]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            cwd=PROJECT_ROOT,
            env=_probe_environment(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return RuntimeInfo(name=name, onnxruntime="", error=f"its Python did not answer: {exc}")
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.decode(errors="replace").strip()[-500:]
        return RuntimeInfo(name=name, onnxruntime="", error=f"its Python failed ({done.returncode}): {tail}")
    try:
        data = json.loads(lines[-1])
        return msgspec.convert({**data, "name": name}, RuntimeInfo)
    except (ValueError, msgspec.ValidationError) as exc:
        return RuntimeInfo(name=name, onnxruntime="", error=f"its answer could not be read: {exc}")
