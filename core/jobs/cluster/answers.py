"""What a node's agent answers, and how the client reads it: MessagePack bytes, never a pickle.

Every method of the agent (core.jobs.cluster.agent) returns ``bytes``: one of the answers below, encoded with the
worker's own MessagePack (core.jobs.wire). Ray stores a ``bytes`` return as a ``RAW`` object, and ``read`` takes
that object's buffer straight from Ray's core worker, without Ray's deserializer (which would unpickle whatever
the object says it is: a peer that answered with a ``PYTHON`` object would run code here). An object of any other
kind is refused unread; an error object (the agent died, its method raised) becomes an error named by its type
alone, its payload unread. The bytes are then decoded into the answer's type, every field checked.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from core.errors import JobFailed, TargetError
from core.i18n import _
from core.jobs import wire

__all__ = ["Answer", "Missing", "Status", "encode", "read", "read_bytes"]

T = TypeVar("T")
_RAW = b"RAW"  # ray._private.ray_constants.OBJECT_METADATA_TYPE_RAW: a bytes return, stored as it is


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """An answer that carries nothing but, when the agent could not do what was asked, why: a WorkbenchError's
    class name, message and details."""

    error: tuple[str, str, str] | None = None


class Missing(Answer, frozen=True, kw_only=True):
    """Which of the files asked about (by sha256) the node's cache lacks."""

    hashes: list[str] = []


class Status(Answer, frozen=True, kw_only=True):
    """Where a job stands; once it has ended, its result (MessagePack of the job's result type) or its error,
    and the files it wrote as (the client's folder, relative path, bytes)."""

    state: str = "failed"  # an answer that carries only an error is a job that failed
    queue_position: int | None = None
    progress: tuple[float, str] | None = None
    result: bytes | None = None
    outputs: list[tuple[str, str, bytes]] = []


def _error_types() -> dict[int, Any]:
    """Ray's error objects, by the number their metadata carries: each becomes the Ray error the job's code
    already handles, made here, so nothing of the object's payload (a pickled exception, for some) is read."""
    import ray.exceptions as rex
    from ray.core.generated.common_pb2 import ErrorType  # type: ignore[attr-defined]  # generated, no stubs

    died = rex.ActorDiedError
    return {
        ErrorType.Value("ACTOR_DIED"): died,
        ErrorType.Value("WORKER_DIED"): died,
        ErrorType.Value("NODE_DIED"): died,
        ErrorType.Value("LOCAL_RAYLET_DIED"): died,
        ErrorType.Value("OWNER_DIED"): died,
        ErrorType.Value("ACTOR_UNAVAILABLE"): lambda: rex.ActorUnavailableError(_("the agent does not answer"), None),
        ErrorType.Value("TASK_CANCELLED"): rex.TaskCancelledError,
    }


def read_bytes(ref: Any, timeout: float | None = None) -> bytes:
    """The bytes of a ``RAW`` object (what an agent's method returned), taken from Ray's core worker without
    deserializing it; GetTimeoutError after ``timeout`` seconds; an error object as the Ray error of its type."""
    from ray._private.worker import global_worker

    global_worker.check_connected()
    wait_ms = -1 if timeout is None else max(0, int(timeout * 1000))
    # the core worker's own call under ray.get, before ray.get deserializes: (data, metadata, transport) per ref
    ((data, metadata, *_rest),) = global_worker.core_worker.get_objects([ref], wait_ms)  # type: ignore[attr-defined]
    kind = bytes(metadata or b"").split(b",")[0]
    if kind == _RAW:
        return b"" if data is None else bytes(data.to_pybytes())
    if kind.isdigit():
        error = _error_types().get(int(kind))
        if error is not None:
            raise error()
        raise JobFailed(
            "A node's agent failed while answering (Ray's error type "
            f"{int(kind)}); its error was not read. See the node's Ray logs, or run the job on another target."
        )
    raise TargetError(
        _(
            "A node's agent answered with a Ray object of kind {kind} instead of bytes; it was "
            "not read (the app never unpickles what comes from the cluster). Check that every "
            "node runs this project's code."
        ).format(kind=repr(kind[:20]))
    )


def read(ref: Any, type_: type[T], timeout: float | None = None) -> T:
    """The answer ``ref`` holds, decoded as ``type_``: TargetError when the bytes are not one."""
    data = read_bytes(ref, timeout)
    try:
        return wire.decode(data, type_)
    except wire.WireError as exc:
        raise TargetError(
            _("A node's agent sent an answer that is not a {kind}: {value}").format(kind=type_.__name__, value=exc)
        ) from None


def encode(answer: Answer) -> bytes:
    """An answer as the agent sends it."""
    return wire.encode(answer)
