"""Uploads written to disk as they arrive, never held in the server's memory.

Streamlit 1.67 keeps every uploaded file's bytes in the server's memory for as long as its session lasts
(``MemoryUploadedFileManager``), fed by a route that reads the whole body into one ``bytes`` (``upload.read()``);
a page that touches ``getbuffer()`` makes another copy per run. A 1.34 GB model held 4.9–5.3 GB at the peak and
2.86 GB after its browser was closed. Here the upload route streams the file part of the request into a file of
its own (``<data>/uploads/<server>/<session>/<file id>``, written ~1 MiB at a time in a thread) and the manager
records it with no bytes; a page takes the file by its path (ui.uploads), and the file goes when its entry is
removed from the upload box or its session ends. ``install`` puts both in place before Streamlit starts
(``python -m ui.server``); without it (AppTest, a bare ``streamlit run``) uploads stay in memory as Streamlit keeps
them, and ui.uploads reads them from there.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from core.workspace import LAST_USED, sweep_workspaces

__all__ = ["SPOOL_FOLDER", "DiskUploadedFileManager", "install", "receive_to_disk"]

SPOOL_FOLDER = "uploads"  # under the data folder
_ID = re.compile(r"[A-Za-z0-9-]{1,64}")  # Streamlit's session and file ids are UUIDs
WRITE_BYTES = 1 << 20  # what is gathered before one write (in a thread, off the event loop)
FIELD_BYTES = 1 << 20  # the most kept of the request's parts that are not the file
MULTIPART_SLACK = 1 << 20  # the request's framing beyond the file itself (as Streamlit allows)


class DiskUploadedFileManager(MemoryUploadedFileManager):
    """Streamlit's manager, with each file's bytes in a file of this server's folder instead of in memory: its
    record holds none (``data`` is empty; ui.uploads takes the file by ``path``)."""

    def __init__(self, upload_endpoint: str, folder: Path) -> None:
        super().__init__(upload_endpoint)
        self.folder = folder

    def path(self, session_id: str, file_id: str) -> Path | None:
        """Where the file ``file_id`` of ``session_id`` is written (None for an id that is no plain name)."""
        if not (_ID.fullmatch(session_id) and _ID.fullmatch(file_id)):
            return None
        return self.folder / session_id / file_id

    def add_file(self, session_id: str, file: UploadedFileRec) -> None:
        (self.folder / LAST_USED).touch()  # the sweep of a later server leaves a folder in use alone
        super().add_file(session_id, file)

    def remove_file(self, session_id: str, file_id: str) -> None:
        super().remove_file(session_id, file_id)
        path = self.path(session_id, file_id)
        if path is not None:
            path.unlink(missing_ok=True)

    def remove_session_files(self, session_id: str) -> None:
        super().remove_session_files(session_id)
        if _ID.fullmatch(session_id):
            shutil.rmtree(self.folder / session_id, ignore_errors=True)


def _decoded(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def receive_to_disk(chunks: Any, content_type: str, target: Path, cap: int) -> tuple[str, str]:
    """The one file part of a multipart body (the async iterable ``chunks``) written to ``target`` as it arrives,
    ~WRITE_BYTES at a time in a worker thread; its (file name, content type). Raises ValueError for a body that
    is not one file in multipart, OverflowError past ``cap`` bytes of body. ``target`` is removed on failure."""
    import anyio
    from python_multipart.multipart import MultipartParser, parse_options_header

    _kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise ValueError("Missing boundary in multipart.")
    files: list[tuple[str, str]] = []
    pending: list[bytes] = []
    part: dict[str, Any] = {"field": b"", "value": b"", "headers": {}, "file": False, "other": 0}

    def on_part_begin() -> None:
        part.update(field=b"", value=b"", headers={}, file=False)

    def on_header_field(data: bytes, start: int, end: int) -> None:
        part["field"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        part["value"] += data[start:end]

    def on_header_end() -> None:
        part["headers"][part["field"].lower()] = part["value"]
        part["field"], part["value"] = b"", b""

    def on_headers_finished() -> None:
        _disposition, options = parse_options_header(part["headers"].get(b"content-disposition", b""))
        if b"filename" in options:
            if files:
                raise ValueError("Expected 1 file, but got more.")
            kind = _decoded(part["headers"].get(b"content-type", b"")) or "application/octet-stream"
            files.append((_decoded(options[b"filename"]), kind))
            part["file"] = True

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if part["file"]:
            pending.append(data[start:end])
            return
        part["other"] += end - start
        if part["other"] > FIELD_BYTES:
            raise ValueError("A part that is not the file is too large.")

    callbacks = {
        "on_part_begin": on_part_begin, "on_header_field": on_header_field, "on_header_value": on_header_value,
        "on_header_end": on_header_end, "on_headers_finished": on_headers_finished, "on_part_data": on_part_data,
    }  # fmt: skip
    parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
    received = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "wb") as out:
            async for chunk in chunks:
                received += len(chunk)
                if received > cap:
                    raise OverflowError(received)
                parser.write(chunk)
                if sum(len(p) for p in pending) >= WRITE_BYTES:
                    data = b"".join(pending)
                    pending.clear()
                    await anyio.to_thread.run_sync(out.write, data)
            parser.finalize()
            if pending:
                await anyio.to_thread.run_sync(out.write, b"".join(pending))
        if len(files) != 1:
            raise ValueError(f"Expected 1 file, but got {len(files)}.")
    except BaseException as exc:
        target.unlink(missing_ok=True)
        if type(exc).__module__.startswith("python_multipart"):
            raise ValueError("Invalid multipart data.") from exc
        raise
    return files[0]


def _put_route(runtime: Any, manager: DiskUploadedFileManager, original: Any) -> Any:
    """The PUT of ``/_stcore/upload_file/{session_id}/{file_id}``, as Streamlit's own checks it (XSRF, a live
    session, the size limit), with the file written to disk by ``receive_to_disk``; its answer's headers are
    the ones Streamlit's OPTIONS route (``original``) sets."""
    from starlette.exceptions import HTTPException
    from starlette.responses import Response
    from streamlit import config
    from streamlit.web.server.server_util import is_xsrf_enabled
    from streamlit.web.server.starlette.starlette_app_utils import validate_xsrf_token
    from streamlit.web.server.starlette.starlette_server_config import XSRF_COOKIE_NAME

    async def put(request: Any) -> Any:
        if is_xsrf_enabled() and not validate_xsrf_token(
            request.headers.get("X-Xsrftoken"), request.cookies.get(XSRF_COOKIE_NAME)
        ):
            raise HTTPException(status_code=403, detail="XSRF token missing or invalid")
        session_id, file_id = request.path_params["session_id"], request.path_params["file_id"]
        target = manager.path(session_id, file_id)
        if target is None or not runtime.is_active_session(session_id):
            raise HTTPException(status_code=400, detail="Invalid session_id or file_id.")
        limit = int(config.get_option("server.maxUploadSize")) * 1024 * 1024
        with contextlib.suppress(ValueError):
            if int(request.headers.get("content-length") or 0) > limit + MULTIPART_SLACK:
                raise HTTPException(status_code=413, detail="File too large")
        aside = target.with_name(f".{file_id}.{uuid.uuid4().hex[:8]}.part")
        try:
            name, kind = await receive_to_disk(
                request.stream(), request.headers.get("content-type", ""), aside, limit + MULTIPART_SLACK
            )
        except OverflowError:
            raise HTTPException(status_code=413, detail="File too large") from None
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        if aside.stat().st_size > limit:
            aside.unlink(missing_ok=True)
            raise HTTPException(status_code=413, detail="File too large")
        aside.replace(target)
        manager.add_file(session_id, UploadedFileRec(file_id=file_id, name=name, type=kind, data=b""))
        response = Response(status_code=204)
        allowed = await original(request)  # Streamlit's OPTIONS answer: its CORS and XSRF headers
        for header in ("Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Allow-Origin",
                       "Access-Control-Allow-Credentials", "Vary"):  # fmt: skip
            if header in allowed.headers:
                response.headers[header] = allowed.headers[header]
        return response

    return put


def _with_disk_put(routes: Sequence[Any], runtime: Any, manager: DiskUploadedFileManager) -> list[Any]:
    """Streamlit's upload routes with its PUT replaced by one that writes to disk (DELETE and OPTIONS kept)."""
    from starlette.routing import Route

    options = next(r for r in routes if isinstance(r, Route) and r.methods and "OPTIONS" in r.methods)
    put = _put_route(runtime, manager, options.endpoint)
    return [Route(r.path, put, methods=["PUT"]) if _is_put(r) else r for r in routes]


def _is_put(route: Any) -> bool:
    return bool(getattr(route, "methods", None)) and "PUT" in route.methods


def install(data_dir: str | Path, max_age_s: float) -> Path:
    """Make the Streamlit server about to start keep uploads on disk, in a folder of this server's under
    ``data_dir`` (folders of servers gone for longer than ``max_age_s`` are removed first); returns the folder."""
    from streamlit.web.server import server
    from streamlit.web.server.starlette import starlette_app

    root = Path(data_dir) / SPOOL_FOLDER
    sweep_workspaces(root, max_age_s)
    folder = root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LAST_USED).touch()
    manager = DiskUploadedFileManager(server.UPLOAD_FILE_ENDPOINT, folder)
    server.MemoryUploadedFileManager = lambda endpoint: manager  # type: ignore[assignment,misc]
    original = starlette_app.create_upload_routes

    def create_upload_routes(runtime: Any, upload_mgr: Any, base_url: str | None) -> list[Any]:
        routes = original(runtime, upload_mgr, base_url)
        return (
            _with_disk_put(routes, runtime, upload_mgr) if isinstance(upload_mgr, DiskUploadedFileManager) else routes
        )

    starlette_app.create_upload_routes = create_upload_routes  # type: ignore[assignment]
    return folder
