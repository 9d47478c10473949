"""A job the runtimes' tests run in a worker: what its Python is and imports (core.runtime.runtimes)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class WhereRequest:
    runtime: str = "default"
    write_into: str = ""  # a file the job tries to write (the runtime's own folder: read-only in the sandbox)


def where(request: WhereRequest) -> dict[str, str]:
    """The worker's interpreter, where its onnxruntime, numpy, onnx and msgspec come from, whether torch was
    imported, and whether it could write ``write_into``."""
    import sys

    import msgspec
    import numpy
    import onnx
    import onnxruntime

    seen = {
        "python": sys.executable,
        "onnxruntime": onnxruntime.__version__,
        "onnxruntime_file": str(onnxruntime.__file__),
        "numpy_file": str(numpy.__file__),
        "onnx_file": str(onnx.__file__),
        "msgspec_file": str(msgspec.__file__),
        "torch": str("torch" in sys.modules),
    }
    if request.write_into:
        try:
            with open(request.write_into, "w") as fh:
                fh.write("tampered")
            seen["write"] = "written"
        except OSError as exc:
            seen["write"] = type(exc).__name__
    return seen
