"""The worker process: reads one job request on stdin, runs it, sends framed messages on its own channel.

Started by core.jobs.process, never imported by the app. The protocol channel is a private copy of stdout;
the real stdout is pointed at stderr so that whatever the job's libraries print cannot corrupt the messages.
Arguments arrive as MessagePack and are decoded into the types the job's function declares.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # No cyclic garbage collection while the worker imports the job's modules and libraries (onnx, numpy: some
    # 35,000 objects it tracks, a few hundred of them garbage): its passes took 7% of the imports' time (10 ms of
    # CPU), which is on a command's critical path (issue #51). It is on again, with what was imported frozen out of
    # its passes, before the job runs.
    gc.disable()

import importlib
import inspect
import os
import resource
import sys
from collections.abc import Callable, Iterable
from typing import IO, Any

import msgspec

from core.i18n import set_language
from core.jobs import wire
from core.jobs.registry import JobSignature, resolve, signature_of

__all__ = ["PRELOADED", "main"]

# what a pre-started worker imports ahead; with --torch, torch too (~3 CPU-s, only the jobs marked torch need it)
PRELOADED = ("numpy", "msgspec", "onnx", "onnxruntime")


class _Channel:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def send(self, message: wire.Message) -> None:
        wire.write_frame(self._stream, wire.encode(message))


def _arguments(request: wire.Request, signature: JobSignature, func: Callable[..., Any]) -> dict[str, Any]:
    """The request's arguments decoded into the types the function declares, defaults for the rest."""
    params = inspect.signature(func).parameters
    fields = [
        (name, kind) if params[name].default is inspect.Parameter.empty else (name, kind, params[name].default)
        for name, kind in signature.parameters.items()
    ]
    args_type = msgspec.defstruct("Arguments", fields, kw_only=True, forbid_unknown_fields=True)
    try:
        decoded: Any = wire.decode(request.args, args_type)
    except wire.WireError as exc:
        raise TypeError(f"the job's arguments {exc}") from None
    return {name: getattr(decoded, name) for name in signature.parameters}


def _run(request: wire.Request, channel: _Channel) -> wire.Message:
    func = resolve(request.target)
    signature = signature_of(request.target)
    args = _arguments(request, signature, func)
    if signature.takes_progress:

        def progress(fraction: float, message: str = "") -> None:
            channel.send(wire.ProgressReport(fraction=max(0.0, min(1.0, float(fraction))), message=str(message)))

        args["progress"] = progress
    if signature.takes_limits:
        from core.settings import IntakeLimits

        args["limits"] = wire.decode(request.limits, IntakeLimits)
    return wire.Finished(value=msgspec.Raw(wire.encode(func(**args))))


def _failure(exc: BaseException) -> wire.Failed:
    from core.errors import WorkbenchError

    if isinstance(exc, MemoryError):
        return wire.Failed(error="MemoryError", message="out of memory")
    if isinstance(exc, WorkbenchError):
        return wire.Failed(error=type(exc).__name__, message=str(exc))
    import traceback  # only a job that failed needs it: not imported before every job

    return wire.Failed(
        error="JobFailed",
        exc_type=type(exc).__name__,
        message=str(exc)[:2000],
        traceback=traceback.format_exc()[-8000:],
    )


def _preload(torch: bool) -> None:
    """What a pre-started worker imports while it waits: the libraries every job needs (half a second of
    imports; torch, for a worker kept for the jobs that use it, two or three more) and the job table's own
    modules. None of it touches a model."""
    _import_each((*PRELOADED, "torch") if torch else PRELOADED, "could not preload {name}")
    from core.jobs.registry import JOBS, signature_of

    for name in JOBS.names():
        signature_of(JOBS.get(name).target)


def _import_ahead(flags: list[str]) -> None:
    """The modules ``--import=A,B`` names (a worker started ahead of a job its command knows, core.jobs.ahead),
    imported while the command still builds the request, as ``_preload`` does for a pre-started worker: the job's
    own modules and the libraries they import inside their functions (onnx). None of it touches a model."""
    for flag in flags:
        if flag.startswith("--import="):
            _import_each(filter(None, flag.removeprefix("--import=").split(",")), "could not import {name} ahead")


def _import_each(names: Iterable[str], failed: str) -> None:
    """Import ``names`` before the job comes; one that fails is said on stderr (``failed``, of its ``name``) and
    left (a missing optional library: the job that needs it will say so)."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            print(f"worker: {failed.format(name=name)}: {exc}", file=sys.stderr)


def _make_links(links: list[tuple[str, str]]) -> None:
    """The paths the job was given, as links to where they lie in this sandbox (its data folder is an empty,
    private one: nothing here is anybody else's)."""
    for link, target in links:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)


def main(argv: list[str] | None = None) -> int:
    flags = sys.argv[1:] if argv is None else argv
    warm = "--warm" in flags
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = _Channel(protocol)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash must not litter the disk with core files
    if warm:
        _preload(torch="--torch" in flags)
        channel.send(wire.Ready(pid=os.getpid()))
    _import_ahead(flags)

    request: wire.Request = wire.decode(sys.stdin.buffer.read(), wire.Request)
    gc.freeze()
    gc.enable()
    set_language(request.language)
    _make_links(request.links)
    channel.send(wire.Started(pid=os.getpid()))
    try:
        message = _run(request, channel)
    except BaseException as exc:  # every ending goes back to the caller as a message, never a dead pipe
        message = _failure(exc)
    try:
        channel.send(message)
    except MemoryError:
        channel.send(_failure(MemoryError()))
    return 0


if __name__ == "__main__":
    code = main()
    # Out at once: the answer is sent, and an interpreter that imported torch takes a fifth of a second to
    # tear itself down, which the caller would wait for.
    sys.stderr.flush()
    os._exit(code)
