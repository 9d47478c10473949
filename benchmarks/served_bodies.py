"""The generated server against large and hostile bodies (issue #46): how long other requests wait while a large
JSON body is parsed, what parsing it takes of memory, and what a small .npz that declares gigabytes costs.

In-process, through the ASGI app (httpx's ASGI transport, one event loop, as uvicorn runs it): a 16 MiB JSON body
(the largest the server takes) of 1×4 rows is posted to the relu of tests/builders.py while ``GET /health`` is
asked back to back; printed: the longest and the median wait of those, and how long the large request took. Then
the peak memory (tracemalloc: Python's and numpy's allocations) of parsing the same body and one of whole numbers,
and the time and peak of answering a 2 MB .npz whose member declares 2.16 GB.

Run: .venv/bin/python benchmarks/served_bodies.py [--app OLD_APP.py] [--mib 16]
(--app serves another app.py with the same signature, e.g. ``git show HEAD~1:core/deploy/served_app.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import io
import shutil
import statistics
import struct
import sys
import tempfile
import time
import tracemalloc
import zipfile
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import numpy as np

from core.deploy import DeployRequest
from core.deploy.server import generate_server
from tests.builders import relu_model, write

JSON = {"content-type": "application/json"}


def _module(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("served_bodies_app", folder / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.state["session"] = module.make_session()  # the ASGI transport runs no lifespan
    return module


def _rows_body(mib: float, row: bytes) -> bytes:
    count = int(mib * (1 << 20) - 40) // len(row)
    return b'{"inputs": {"x": [' + row * (count - 1) + row[:-1] + b"]}}"


async def _waits(module: Any, body: bytes) -> tuple[list[float], float, int]:
    transport = httpx.ASGITransport(app=module.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://served", timeout=600) as client:
        await client.get("/health")
        start = time.perf_counter()
        large = asyncio.create_task(client.post("/predict", content=body, headers=JSON))
        waits = []
        while not large.done():
            asked = time.perf_counter()
            await client.get("/health")
            waits.append(time.perf_counter() - asked)
        answer = await large
        return waits, time.perf_counter() - start, answer.status_code


def _peak(call: Any) -> tuple[Any, float, float]:
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = call()
        return result, time.perf_counter() - start, tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


def _bomb() -> bytes:
    """A 2 MB .npz whose one member declares shape [135000000, 4] float32 (2.16 GB) in header and listing."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (135_000_000, 4)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x.npy", header.getvalue() + bytes(2 << 20))
    body = buffer.getvalue()
    at = body.index(b"PK\x01\x02")
    return body[: at + 24] + struct.pack("<I", 2_160_000_128) + body[at + 28 :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", help="serve this app.py instead of the one Deploy writes")
    parser.add_argument("--mib", type=float, default=16.0, help="size of the large JSON body")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = write(relu_model(), Path(tmp) / "relu.onnx")
        folder = Path(generate_server(DeployRequest(model=str(model), out_dir=str(Path(tmp) / "s"), zip=False)).out_dir)
        if args.app:
            shutil.copyfile(args.app, folder / "app.py")
        module = _module(folder)
        floats = _rows_body(args.mib, b"[0.0,0.0,0.0,0.0],")
        waits, took, status = asyncio.run(_waits(module, floats))
        print(
            f"{len(floats) / (1 << 20):.1f} MiB of JSON: answered {status} in {took:.2f} s; GET /health meanwhile "
            f"({len(waits)} asked): longest wait {max(waits) * 1e3:.0f} ms, "
            f"median {statistics.median(waits) * 1e3:.1f} ms"
        )
        for name, row in (("floats [0.0,…]", b"[0.0,0.0,0.0,0.0],"), ("whole numbers [1,2,3,4]", b"[1,2,3,4],")):
            body = _rows_body(args.mib, row)
            decode = getattr(module, "_decode", None)  # an app.py before issue #46 has _from_json only
            call = partial(decode, body, module.JSON) if decode else partial(module._from_json, body)
            _result, seconds, peak = _peak(call)
            print(
                f"parsing {len(body) / (1 << 20):.1f} MiB of {name}: peak {peak:.0f} MiB "
                f"({seconds:.1f} s under tracemalloc)"
            )
        bomb = _bomb()

        async def post_bomb() -> httpx.Response:
            transport = httpx.ASGITransport(app=module.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://served", timeout=600) as client:
                return await client.post("/predict", content=bomb, headers={"content-type": "application/x-npz"})

        answer, seconds, peak = _peak(lambda: asyncio.run(post_bomb()))
        print(
            f"a {len(bomb) / 1e6:.1f} MB .npz declaring 2.16 GB: {answer.status_code} in {seconds * 1e3:.0f} ms, "
            f"peak {peak:.0f} MiB: {answer.json()['detail'][:120]}"
        )


if __name__ == "__main__":
    main()
