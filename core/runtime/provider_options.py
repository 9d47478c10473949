"""How the app opens each execution provider: one row per provider, with its options and what it loads first.

A provider that needs nothing (CPU, Azure, any not listed) is opened by its name alone. The rows that need a GPU
(CUDA, TensorRT) are small and typed so that they run as written the day a machine has one, and their builders are
tested here with fakes: CUDA's libraries come from the runtime's own nvidia-* packages (``preload_dlls``, which never
imports torch on Linux), TensorRT's from its ``tensorrt_libs`` package, and TensorRT keeps its engines and timing
caches in a folder the caller names (in a sandboxed job, its private /tmp: rebuilt per job; benchmarks/gpu_check.py
names the app's cache folder).
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CPU",
    "CUDA",
    "SETUPS",
    "STRICT",
    "ProviderSetup",
    "cuda_arena_limit_mb",
    "session_providers",
    "tensorrt_cache",
]

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
CUDA_GRAPH = "enable_cuda_graph"  # the CUDA provider's option: capture the session's calls once, replay them
# ONNX Runtime's own switch: a session whose nodes would go to the CPU provider instead of those asked is refused
# (the CPU provider must then not be listed: ORT calls that a conflicting configuration)
STRICT = ("session.disable_cpu_ep_fallback", "1")
TENSORRT_FOLDER = "tensorrt"  # under the cache folder the caller names: engines and timing caches


@dataclass(frozen=True, kw_only=True)
class ProviderSetup:
    """One provider's row: the options its sessions get (from the cache folder the caller names and the threads a
    session is given: a provider that keeps its own thread pool must be told) and what must be loaded before its
    first session (libraries its build does not find by itself)."""

    provider: str
    options: Callable[[str, int], dict[str, str]]
    prepare: Callable[[], object] | None = None
    device: str = "cpu"  # where it computes: "gpu" providers copy inputs and outputs across (Memcpy nodes)
    own_threads: bool = False  # keeps its own thread pool, sized by the session's threads through its options


def tensorrt_cache(cache_dir: str) -> Path:
    """Where TensorRT keeps its engines and timing cache under ``cache_dir`` (made when missing)."""
    folder = Path(cache_dir or "/tmp") / TENSORRT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _openvino(cache_dir: str, threads: int) -> dict[str, str]:
    # the only device OpenVINO finds on a machine without an Intel GPU or NPU; its own threads, not ORT's (which it
    # ignores: left to itself it takes every core, while the CPU provider beside it is given one)
    return {"device_type": "CPU", **({"num_of_threads": str(threads)} if threads > 0 else {})}


def _cuda(cache_dir: str, threads: int) -> dict[str, str]:
    return {"device_id": "0"}


def _tensorrt(cache_dir: str, threads: int) -> dict[str, str]:
    folder = str(tensorrt_cache(cache_dir))
    return {
        "device_id": "0",
        "trt_engine_cache_enable": "1",
        "trt_engine_cache_path": folder,
        "trt_timing_cache_enable": "1",
        "trt_timing_cache_path": folder,
    }


def _preload_cuda() -> None:
    """CUDA's and cuDNN's libraries, from the runtime's nvidia-* packages (a GPU build finds them no other way
    in the sandbox's clean environment)."""
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls(cuda=True, cudnn=True, msvc=False)


def _preload_tensorrt(find: Callable[[str], Any] = importlib.util.find_spec) -> list[str]:
    """TensorRT's libraries from its ``tensorrt_libs`` package (tensorrt-cu13-libs), loaded globally so that the
    TensorRT provider's library finds them; returns what was loaded (nothing when the package is absent: the
    provider then says so itself)."""
    _preload_cuda()
    spec = find("tensorrt_libs")
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations)))
    loaded = []
    for pattern in ("libnvinfer.so*", "libnvinfer_plugin.so*", "libnvonnxparser.so*"):
        for library in sorted(folder.glob(pattern))[:1]:
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
            loaded.append(library.name)
    return loaded


SETUPS: dict[str, ProviderSetup] = {
    row.provider: row
    for row in (
        ProviderSetup(provider="OpenVINOExecutionProvider", options=_openvino, own_threads=True),
        ProviderSetup(provider="CUDAExecutionProvider", options=_cuda, prepare=_preload_cuda, device="gpu"),
        ProviderSetup(provider="TensorrtExecutionProvider", options=_tensorrt, prepare=_preload_tensorrt, device="gpu"),
    )
}


def cuda_arena_limit_mb(cache_dir: str = "", threads: int = 0) -> float | None:
    """The limit of the CUDA provider's memory arena as its row configures it (``gpu_mem_limit``, MiB); None: no
    limit set (ONNX Runtime's default, SIZE_MAX). What ORT offers in place of a peak: its Python API tells none."""
    limit = SETUPS[CUDA].options(cache_dir, threads).get("gpu_mem_limit")
    return int(limit) / 2**20 if limit else None


_PREPARED: set[str] = set()  # loaded once per process


def session_providers(
    providers: list[str], cache_dir: str = "", strict: bool = False, threads: int = 0, cuda_graph: bool = False
) -> list[Any]:
    """``providers`` as ``InferenceSession`` takes them, each with its row's options (its ``prepare`` run first) for
    a session of ``threads`` intra-op threads (0: the default); ``strict``: without the CPU provider, for a session
    made with ``STRICT`` (unless CPU is all that is asked); ``cuda_graph``: CUDA's calls captured as a CUDA graph
    (``enable_cuda_graph``; the session must then be called through IO binding, every node on CUDA)."""
    listed: list[Any] = []
    for name in providers:
        if strict and name == CPU and any(p != CPU for p in providers):
            continue
        setup = SETUPS.get(name)
        if setup is None:
            listed.append(name)
            continue
        if setup.prepare is not None and name not in _PREPARED:
            setup.prepare()
            _PREPARED.add(name)
        options = setup.options(cache_dir, threads)
        if cuda_graph and name == CUDA:
            options = {**options, CUDA_GRAPH: "1"}
        listed.append((name, options))
    return listed
