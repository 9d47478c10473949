"""ONNX Runtime helpers shared by every feature: providers, optimization levels, sessions, logs and messages."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import onnxruntime

from core.errors import PartitionError, WorkbenchError
from core.i18n import N_

__all__ = [
    "LEVELS",
    "STOP_SPINNING",
    "Level",
    "Provider",
    "NUMPY_TYPES",
    "PROVIDERS",
    "ProviderInfo",
    "capture_ort_log",
    "capture_session_logs",
    "explain_session_error",
    "ort_message",
    "parse_ort_log",
    "provider_table",
    "session_options",
    "short_name",
    "stop_spinning",
]

# a session input's type, as ORT names it -> the numpy dtype to feed it
NUMPY_TYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64", "tensor(int64)": "int64",
    "tensor(int32)": "int32", "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}  # fmt: skip


class Provider(NamedTuple):
    """An execution provider as a person knows it (``hardware`` and ``install`` in English: translated where shown)."""

    short: str  # CUDA, TensorRT, ...
    hardware: str  # what it drives
    install: str  # what it takes to get it


ANY_BUILD = N_("a build of ONNX Runtime that has it")  # what a provider the table does not know takes


def install_of(name: str) -> str:
    """What it takes to get the provider ``name`` (English, marked for the catalog: translated where shown)."""
    return PROVIDERS[name].install if name in PROVIDERS else ANY_BUILD


class Level(NamedTuple):
    """One of ONNX Runtime's graph optimization levels."""

    name: str  # DISABLE_ALL, BASIC, ...
    value: int  # GraphOptimizationLevel's


PROVIDERS: dict[str, Provider] = {
    "CPUExecutionProvider": Provider(
        "CPU", N_("Any CPU; ORT's own kernels, the fallback for every op"), N_("built in")
    ),
    "CUDAExecutionProvider": Provider(
        "CUDA",
        N_("NVIDIA GPUs through CUDA and cuDNN"),
        N_("the onnxruntime-gpu package (instead of onnxruntime) and an NVIDIA GPU with CUDA 12 and cuDNN 9"),
    ),
    "TensorrtExecutionProvider": Provider(
        "TensorRT",
        N_("NVIDIA GPUs through TensorRT: whole subgraphs compiled into optimized engines"),
        N_("onnxruntime-gpu, an NVIDIA GPU and the TensorRT libraries"),
    ),
    "MIGraphXExecutionProvider": Provider(
        "MIGraphX", N_("AMD GPUs through MIGraphX"), N_("a ROCm build of ONNX Runtime, AMD GPU")
    ),
    "OpenVINOExecutionProvider": Provider(
        "OpenVINO", N_("Intel CPUs, integrated GPUs and NPUs through OpenVINO"), N_("the onnxruntime-openvino package")
    ),
    "DnnlExecutionProvider": Provider(
        "oneDNN", N_("Intel CPUs through oneDNN kernels"), N_("an ONNX Runtime built with --use_dnnl")
    ),
    "VitisAIExecutionProvider": Provider(
        "Vitis AI", N_("AMD/Xilinx FPGAs and Ryzen AI NPUs"), N_("the Ryzen AI / Vitis AI build")
    ),
    "QNNExecutionProvider": Provider(
        "QNN",
        N_("Qualcomm Snapdragon NPUs (Hexagon) through the QNN SDK"),
        N_("the onnxruntime-qnn package on a Snapdragon device"),
    ),
    "NnapiExecutionProvider": Provider(
        "NNAPI",
        N_("Android phones' accelerators (GPU, DSP, NPU) through Android's Neural Networks API"),
        N_("the onnxruntime-android package on an Android device"),
    ),
    "VSINPUExecutionProvider": Provider(
        "VSI NPU", N_("VeriSilicon NPUs in embedded SoCs"), N_("a VSINPU build of ONNX Runtime")
    ),
    "JsExecutionProvider": Provider(
        "JS", N_("Browsers, through ONNX Runtime Web's JavaScript kernels"), N_("onnxruntime-web")
    ),
    "CoreMLExecutionProvider": Provider(
        "CoreML",
        N_("Apple devices (Neural Engine, GPU, CPU) through Core ML"),
        N_("the onnxruntime package on macOS or iOS"),
    ),
    "DmlExecutionProvider": Provider(
        "DirectML",
        N_("Any DirectX 12 GPU on Windows through DirectML"),
        N_("the onnxruntime-directml package on Windows"),
    ),
    "RknpuExecutionProvider": Provider("RKNPU", N_("Rockchip NPUs"), N_("an RKNPU build of ONNX Runtime")),
    "WebNNExecutionProvider": Provider(
        "WebNN", N_("Browsers' Web Neural Network API (CPU, GPU, NPU)"), N_("onnxruntime-web")
    ),
    "WebGpuExecutionProvider": Provider(
        "WebGPU", N_("GPUs through WebGPU (browsers, Dawn natively)"), N_("onnxruntime-web")
    ),
    "XnnpackExecutionProvider": Provider(
        "XNNPACK",
        N_("Arm and x86 CPUs through XNNPACK, tuned for mobile and the web"),
        N_("an ONNX Runtime built with XNNPACK (the mobile packages)"),
    ),
    "CANNExecutionProvider": Provider(
        "CANN", N_("Huawei Ascend NPUs through CANN"), N_("the CANN build of ONNX Runtime")
    ),
    "AzureExecutionProvider": Provider(
        "Azure", N_("Not hardware: sends the model's requests to an Azure endpoint"), N_("built in (needs an endpoint)")
    ),
    "ROCMExecutionProvider": Provider("ROCm", N_("AMD GPUs through ROCm"), N_("a ROCm build of ONNX Runtime")),
}

LEVELS: dict[str, Level] = {
    "disable": Level("DISABLE_ALL", 0),
    "basic": Level("BASIC", 1),
    "extended": Level("EXTENDED", 2),
    "layout": Level("LAYOUT", 3),
    "all": Level("ALL", 99),
}


def short_name(provider: str) -> str:
    known = PROVIDERS.get(provider)
    return known.short if known is not None else provider.removesuffix("ExecutionProvider")


@dataclass(frozen=True, kw_only=True)
class ProviderInfo:
    name: str
    short: str
    hardware: str
    available: bool
    install: str


def provider_table(available: list[str] | None = None) -> list[ProviderInfo]:
    """Every provider ORT knows of, the ones in this build first; ``available``: another machine's build (a
    cluster target's), else this one's."""
    import onnxruntime as ort

    available = ort.get_available_providers() if available is None else available
    names = list(dict.fromkeys([*available, *ort.get_all_providers()]))
    table = []
    for name in names:
        known = PROVIDERS.get(name, Provider(short_name(name), "", ANY_BUILD))
        table.append(
            ProviderInfo(
                name=name,
                short=known.short,
                hardware=known.hardware,
                available=name in available,
                install=known.install,
            )
        )
    return table


# Each call's intra-op threads spin while the call runs, as ONNX Runtime's default has them, but stop when it returns
# (the default keeps them spinning a while after). Several sessions alive in one process, timed one call each in
# turn (the benchmark harness, Tune), otherwise slow each other: on two cores ocr_cls's levels took 1.6-2.9x their
# time alone, TinyCNN's 1.3-1.9x, and ALL's speedup over DISABLE_ALL on ocr_cls read 2.6x where alone it is 1.8x;
# with this, 1.1-1.4x (that speedup 1.6x), and a session alone is as fast (benchmarks/interleaved_sessions.py).
# The server Deploy writes makes its session the same way.
STOP_SPINNING = ("session.force_spinning_stop", "1")


def stop_spinning(options: onnxruntime.SessionOptions) -> onnxruntime.SessionOptions:
    """``options`` with the threads' spinning stopped at the end of each call (STOP_SPINNING)."""
    options.add_session_config_entry(*STOP_SPINNING)
    return options


def session_options(level: str = "all", threads: int = 0) -> onnxruntime.SessionOptions:
    import onnxruntime as ort

    if level not in LEVELS:
        raise PartitionError(f"Unknown optimization level {level!r}; choose one of {', '.join(LEVELS)}.")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[level].value)
    options.intra_op_num_threads = threads
    return options


Line = tuple[int, str, str]  # a message of ORT's log: (severity, code location, message)
MAX_LOG_BYTES = 16 << 20  # of a build's log written to stderr, what is read back (a 30,000-node model's: ~4 MB)
# a line of ORT's default log: "2026-12-04 16:31:02.72 [V:onnxruntime:, session_state.cc:1307 Verify...] Node ..."
_LOG_LINE = re.compile(r"^\S+ \S+ \[([VIWEF]):onnxruntime:[^,]*, ([^\]]*)\] ?(.*)$")
_SEVERITIES = {"V": 0, "I": 1, "W": 2, "E": 3, "F": 4}


def parse_ort_log(text: str) -> list[tuple[int, str, str]]:
    """ORT's default log as it writes it to stderr, as (severity, code location, message); a line without the
    prefix continues the message before it."""
    found: list[tuple[int, str, str]] = []
    for line in text.splitlines():
        matched = _LOG_LINE.match(line.replace("\x1b[1;31m", "").replace("\x1b[m", ""))
        if matched:
            found.append((_SEVERITIES[matched.group(1)], matched.group(2), matched.group(3)))
        elif found and line.strip():
            severity, location, message = found[-1]
            found[-1] = (severity, location, f"{message}\n{line}")
    return found


@contextlib.contextmanager
def _stderr_log(lines: list[Line], severity: int) -> Iterator[None]:
    """A build without ``set_default_logger_callback`` (before 1.2x, such as onnxruntime-openvino 1.24) writes its
    log to the process's stderr: it goes to a file of its own while the block runs, and is read back. Only for a
    process that runs one thing at a time (a job's worker)."""
    import onnxruntime as ort

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        ort.set_default_logger_severity(severity)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            ort.set_default_logger_severity(2)
            log.seek(0)
            lines.extend(parse_ort_log(log.read(MAX_LOG_BYTES).decode(errors="replace")))


@dataclass(eq=False, kw_only=True)
class _Capture:
    """One capture open: the messages of the sessions whose logid is a key of ``logs`` go there; with ``lines``,
    the other messages emitted on the thread that opened it (ORT logs a session's build on the thread building it)."""

    logs: dict[str, list[Line]]
    lines: list[Line] | None
    severity: int
    thread: int = field(default_factory=threading.get_ident)


class _Dispatcher:
    """ORT's one default logger callback, installed while any capture is open and shared by them all. The logger
    is the process's: one callback per capture, set and reset in turn, could not overlap, and captures in threads
    beside each other (Partition's session among the levels') each get their own sessions' messages here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: tuple[_Capture, ...] = ()  # replaced whole under the lock, never changed: read without it

    def __call__(self, severity: int, category: str, logid: str, location: str, message: str) -> None:
        claimed = False
        for capture in self.open:
            lines = capture.logs.get(logid)
            if lines is not None:
                claimed = True
                if severity >= capture.severity:
                    lines.append((severity, location, message))
        if claimed:
            return
        thread = threading.get_ident()  # ORT calls back on the thread that logs
        for capture in self.open:
            if capture.lines is not None and capture.thread == thread and severity >= capture.severity:
                capture.lines.append((severity, location, message))

    @contextlib.contextmanager
    def capturing(self, capture: _Capture) -> Iterator[None]:
        import onnxruntime as ort

        with self.lock:
            if not self.open:
                ort.set_default_logger_callback(self, capture.severity)
            else:  # the callback stays (replacing it while other threads log through it is not safe)
                ort.set_default_logger_severity(min(capture.severity, *(c.severity for c in self.open)))
            self.open = (*self.open, capture)  # once ORT took it: a capture that failed to open is not counted
        try:
            yield
        finally:
            with self.lock:
                self.open = tuple(c for c in self.open if c is not capture)
                if not self.open:
                    ort.set_default_logger_callback(None)
                    ort.set_default_logger_severity(2)  # the callback's severity stays otherwise: back to warnings
                else:
                    ort.set_default_logger_severity(min(c.severity for c in self.open))


_DISPATCHER = _Dispatcher()


@contextlib.contextmanager
def capture_ort_log(lines: list[Line], severity: int = 0) -> Iterator[None]:
    """Collect ORT's log messages as (severity, code location, message) while the block runs: those of the sessions
    built on this thread, but for a session another capture open at the same time claims by its logid
    (``capture_session_logs``). Captures in other threads may be open at the same time, and captures may nest."""
    import onnxruntime as ort

    if not hasattr(ort, "set_default_logger_callback"):
        with _stderr_log(lines, severity):
            yield
        return
    with _DISPATCHER.capturing(_Capture(logs={}, lines=lines, severity=severity)):
        yield


@contextlib.contextmanager
def capture_session_logs(logs: dict[str, list[Line]], severity: int = 0) -> Iterator[None]:
    """Collect ORT's log messages per session while the block runs, for sessions built at once in threads: each
    session's ``SessionOptions.logid`` is a key of ``logs``, and its messages go to that list. Other captures may
    be open at the same time (Partition's own session's, ``capture_ort_log``, in a thread beside the levels')."""
    with _DISPATCHER.capturing(_Capture(logs=logs, lines=None, severity=severity)):
        yield


_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")
_ORT_LOAD = re.compile(r"Load model from \S+ failed:\s*")
_ORT_SOURCE = re.compile(r"/onnxruntime_src/\S+:\d+ .*?\) ")
_ORT_ALLOC = re.compile(r"Failed to allocate memory for requested buffer of size (\d+)")


_ORT_PATHS = re.compile(r"/onnxruntime_src/\S+\s*")
_ORT_SIGNATURE = re.compile(r"onnxruntime::\S+\(.*?\)\s*")


def ort_message(exc: BaseException | str) -> str:
    """ORT's error text without its prefix, the server's file paths and its C++ source locations."""
    text = _ORT_SOURCE.sub("", _ORT_LOAD.sub("", _ORT_PREFIX.sub("", str(exc).strip())))
    text = re.sub(r"[ \t]+", " ", _ORT_SIGNATURE.sub("", _ORT_PATHS.sub("", text)))
    alloc = _ORT_ALLOC.search(text)
    if alloc:
        size = int(alloc.group(1))
        text += f" (one tensor of {size / 1e9:,.1f} GB: more memory than this machine gives a job)"
    return text.strip()[:1500]


def explain_session_error(exc: Exception, what: str, path: str = "") -> WorkbenchError:
    """ORT's refusal in one readable sentence; with the model's ``path``, in the user's terms where the refusal is
    one core.runtime.refusals knows (an old opset, a training op, a missing locale)."""
    if path:
        import onnx

        from core.runtime.refusals import explain_refusal

        try:
            model = onnx.load_model(path, load_external_data=False)
        except Exception:  # what ORT could not read, onnx may not either: ORT's words then
            model = None
        return explain_refusal(exc, model, what)
    return PartitionError(f"ONNX Runtime could not {what}: {ort_message(exc)}")
