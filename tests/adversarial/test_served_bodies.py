"""The generated server against hostile bodies: an .npz or .npy that declares more than it holds or than the limit
is refused from its listing and headers before anything is inflated; JSON is strict (no NaN, no Infinity, no nesting
deeper than a tensor's), and a large body is parsed a piece at a time in a worker thread; an error names a few
offenders only."""

from __future__ import annotations

import asyncio
import io
import json
import struct
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from core.deploy import DeployRequest
from core.deploy.server import generate_server
from tests.builders import mixed_inputs_model, relu_model, write
from tests.unit.test_deploy import served_module

NPZ = {"content-type": "application/x-npz"}
NPY = {"content-type": "application/x-npy"}


@pytest.fixture(scope="module")
def relu_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server Deploy writes for a relu taking float32 [?, 4]."""
    root = tmp_path_factory.mktemp("served")
    model = write(relu_model(), root / "relu.onnx")
    return Path(generate_server(DeployRequest(model=str(model), out_dir=str(root / "out"), zip=False)).out_dir)


@pytest.fixture(scope="module")
def mixed_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server for a model of three inputs: input_ids int64 [?, ?], mask bool [?, ?], scale float32 [1]."""
    root = tmp_path_factory.mktemp("served")
    model = write(mixed_inputs_model(), root / "mixed.onnx")
    return Path(generate_server(DeployRequest(model=str(model), out_dir=str(root / "out"), zip=False)).out_dir)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    """An .npy file's magic and header alone: it declares ``shape`` and holds no data."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def npz_of(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def zipped(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def declaring(body: bytes, file_size: int) -> bytes:
    """The one-member zip ``body`` with its listing saying the member inflates to ``file_size`` bytes."""
    at = body.index(b"PK\x01\x02")  # the central directory's entry: its uncompressed size is at +24
    return body[: at + 24] + struct.pack("<I", file_size) + body[at + 28 :]


def peak_during(call: Any) -> tuple[Any, int]:
    """``call()``'s result and the most bytes Python and numpy held above the start while it ran."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_a_2_mb_npz_that_declares_2_gb_is_refused_from_its_listing_naming_the_member_and_the_limit(
    relu_server: Path,
) -> None:
    body = declaring(zipped({"x.npy": npy_header((135_000_000, 4)) + bytes(2 << 20)}), 2_160_000_128)
    module = served_module(relu_server)
    with TestClient(module.app) as client:
        answer, peak = peak_during(lambda: client.post("/predict", content=body, headers=NPZ))
    detail = answer.json()["detail"]
    assert answer.status_code == 413, detail
    assert "'x.npy'" in detail and "2,160,000,128 bytes" in detail and "67,108,864" in detail
    assert peak < 8 * len(body)  # the body and its copies in the test client: nothing the size of what it declares


def test_an_npz_member_that_inflates_past_the_array_limit_is_refused_before_it_is_inflated(
    relu_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = served_module(relu_server)
    monkeypatch.setattr(module, "MAX_ARRAYS", 1 << 20)
    bomb = io.BytesIO()
    np.savez_compressed(bomb, x=np.zeros((1 << 17, 4), np.float32))  # 2 MiB of zeros in a 2 KB body
    with TestClient(module.app) as client:
        answer, peak = peak_during(lambda: client.post("/predict", content=bomb.getvalue(), headers=NPZ))
        small = client.post("/predict", content=npz_of(x=np.ones((2, 4), np.float32)), headers=NPZ)
    detail = answer.json()["detail"]
    assert answer.status_code == 413 and "'x.npy'" in detail and "2,097,280 bytes" in detail, detail
    assert "1,048,576" in detail and peak < 1 << 20
    assert small.status_code == 200 and small.json()["outputs"]["y"] == [[1.0] * 4] * 2


@pytest.mark.parametrize(
    ("members", "status", "said"),
    [
        # the header is read from the member's first bytes: a shape larger than the member holds is never allocated
        ({"x.npy": npy_header((1_000_000_000, 4)) + bytes(16)}, 400, "declares shape [1000000000, 4]"),
        ({"x.npy": npy_bytes(np.zeros((1, 4)))}, 422, "'x.npy' holds float64; input 'x' takes float32"),
        ({"x.npy": npy_bytes(np.zeros((1, 5), np.float32))}, 422, "'x.npy' has shape [1, 5]; the model takes [?, 4]"),
        ({"x.npy": npy_bytes(np.zeros(2, np.float32)), "y.npy": b""}, 422, "the model takes 1 input"),
        ({"x.npy": b"not an npy file at all"}, 400, "'x.npy' is not an .npy file"),
    ],
)
def test_npz_members_are_checked_against_the_signature_from_their_headers(
    relu_server: Path, members: dict[str, bytes], status: int, said: str
) -> None:
    with TestClient(served_module(relu_server).app) as client:
        answer = client.post("/predict", content=zipped(members), headers=NPZ)
    assert answer.status_code == status and said in answer.json()["detail"], answer.json()


def test_an_npz_whose_end_record_claims_65535_members_is_refused_before_its_listing_is_read(mixed_server: Path) -> None:
    listing = zipped({"input_ids.npy": b""})
    end = listing.index(b"PK\x05\x06")  # the end record: entries on this disk (+8) and in all (+10)
    body = listing[: end + 8] + struct.pack("<HH", 0xFFFF, 0xFFFF) + listing[end + 12 :]
    with TestClient(served_module(mixed_server).app) as client:
        answer = client.post("/predict", content=body, headers=NPZ)
    assert answer.status_code == 422 and "holds 65,535 arrays; the model takes 3 inputs" in answer.json()["detail"]


def test_an_npy_body_that_declares_more_than_it_holds_is_refused_without_allocating_it(relu_server: Path) -> None:
    body = npy_header((1 << 40, 4)) + bytes(64)
    with TestClient(served_module(relu_server).app) as client:
        answer, peak = peak_during(lambda: client.post("/predict", content=body, headers=NPY))
    detail = answer.json()["detail"]
    assert answer.status_code == 400 and "declares shape [1099511627776, 4] (17,592,186,044,416 bytes)" in detail
    assert "but holds 64" in detail and peak < 1 << 20
    with TestClient(served_module(relu_server).app) as client:
        short = client.post("/predict", content=npy_header((2, 4)) + bytes(16), headers=NPY)
    assert short.status_code == 400 and "(32 bytes) but holds 16" in short.json()["detail"]


def test_json_nested_100000_deep_is_a_400_not_a_500(relu_server: Path) -> None:
    body = b'{"inputs": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    with TestClient(served_module(relu_server).app, raise_server_exceptions=False) as client:
        answer = client.post("/predict", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 400 and "nested too deeply" in answer.json()["detail"]


@pytest.mark.parametrize(
    ("numbers", "status", "said"),
    [
        (b"[[NaN, 1, 2, 3]]", 400, "NaN is not JSON"),
        (b"[[Infinity, 1, 2, 3]]", 400, "Infinity is not JSON"),
        (b"[[-Infinity, 1, 2, 3]]", 400, "-Infinity is not JSON"),
        (b"[[1e400, 1, 2, 3]]", 400, "Number out of range"),  # JSON's grammar, but no double holds it
        (b"[[1e39, 1, 2, 3]]", 422, "a value is outside float32's range"),  # a double, but no float32
    ],
)
def test_json_input_is_strict_no_nan_or_infinity_and_no_number_past_the_dtypes_range(
    relu_server: Path, numbers: bytes, status: int, said: str
) -> None:
    with TestClient(served_module(relu_server).app) as client:
        answer = client.post(
            "/predict", content=b'{"inputs": {"x": ' + numbers + b"}}", headers={"content-type": "application/json"}
        )
    assert answer.status_code == status and said in answer.json()["detail"], answer.json()


def test_200000_unknown_input_names_are_answered_with_five_of_them_and_a_count(relu_server: Path) -> None:
    inputs: dict[str, Any] = {f"n{i}": 1 for i in range(200_000)}
    inputs["a" * 1_000_000] = 1
    with TestClient(served_module(relu_server).app) as client:
        answer = client.post("/predict", json={"inputs": inputs})
    detail = answer.json()["detail"]
    assert answer.status_code == 422 and len(answer.content) < 1000
    assert "unknown ['n0', 'n1', 'n2', 'n3', 'n4'] and 199,996 more" in detail and "missing ['x']" in detail


def test_a_json_body_over_its_limit_is_refused_with_the_way_out(
    relu_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = served_module(relu_server)
    assert module.MAX_JSON == 16 << 20  # parsed, a JSON byte costs up to ~13 of memory: .npy has its own limit
    monkeypatch.setattr(module, "MAX_JSON", 64)
    body = json.dumps({"inputs": {"x": [[0.0] * 4] * 8}}).encode()
    with TestClient(module.app) as client:
        answer = client.post("/predict", content=body, headers={"content-type": "application/json"})
        npy = client.post("/predict", content=npy_bytes(np.zeros((8, 4), np.float32)), headers=NPY)
    assert answer.status_code == 413 and "send the arrays as .npy or .npz" in answer.json()["detail"]
    assert npy.status_code == 200


def test_a_large_body_is_parsed_and_a_large_answer_written_off_the_event_loop_a_small_one_on_it(
    relu_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = served_module(relu_server)
    on_loop: list[tuple[str, bool]] = []

    def spied(name: str) -> Any:
        original = getattr(module, name)

        def spy(*args: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append((name, True))
            except RuntimeError:  # a worker thread runs no event loop
                on_loop.append((name, False))
            return original(*args)

        return spy

    for name in ("_decode", "_encode"):
        monkeypatch.setattr(module, name, spied(name))
    small = {"inputs": {"x": [[-1.0, 2.0, -3.0, 4.0]]}}
    large = {"inputs": {"x": [[-1.0, 2.0, -3.0, 4.0]] * 4096}}  # 100 KB of JSON, 64 KB of outputs
    with TestClient(module.app) as client:
        assert client.post("/predict", json=small).status_code == 200
        assert client.post("/predict", json=large).status_code == 200
    assert on_loop == [("_decode", True), ("_encode", True), ("_decode", False), ("_encode", False)]


def test_a_large_json_body_is_parsed_a_piece_at_a_time_into_the_arrays_a_whole_parse_makes(
    relu_server: Path, mixed_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser holds Python's GIL while it runs: a large body is parsed ~64 KiB at a time (the server serves
    others between pieces), into the same arrays as at once: rows of floats and whole numbers, a row of 100,000."""
    relu = served_module(relu_server)
    parsed: list[int] = []
    whole = relu._parsed

    def measured(decoder: Any, data: Any) -> Any:
        parsed.append(len(data) if decoder is relu._JSON else 0)
        return whole(decoder, data)

    monkeypatch.setattr(relu, "_parsed", measured)
    x = np.random.default_rng(0).standard_normal((20_000, 4)).astype(np.float32)
    rows: list[Any] = x.tolist()
    rows[7] = [1, -2, 3, -4]  # whole numbers among floats: one array of floats, as np.asarray makes it
    with TestClient(relu.app) as client:
        answer = client.post("/predict", json={"inputs": {"x": rows}})
        ragged = client.post("/predict", json={"inputs": {"x": [*rows, [1.0, 2.0]]}})
    y = np.asarray(answer.json()["outputs"]["y"], dtype=np.float32)
    np.testing.assert_array_equal(y, np.maximum(np.asarray(rows, dtype=np.float32), 0))
    assert len(parsed) > 10 and max(parsed) < 80 << 10  # pieces of ~64 KiB, never the 800 KB at once
    assert ragged.status_code == 422 and "nested lists of equal lengths" in ragged.json()["detail"]

    ids = np.arange(100_000).reshape(1, -1)  # one row of 600 KB: parsed a piece at a time itself
    body = {"inputs": {"input_ids": ids.tolist(), "mask": (ids % 2 == 0).tolist(), "scale": [0.5]}}
    with TestClient(served_module(mixed_server).app) as client:
        out = np.asarray(client.post("/predict", json=body).json()["outputs"]["out"])
    np.testing.assert_array_equal(out, np.where(ids % 2 == 0, ids * 0.5, 0.0))
    deeper = {"inputs": {"x": [[row] for row in x.tolist()]}}  # [?, 4] sent as [?, 1, 4]
    with TestClient(served_module(relu_server).app) as client:
        answer = client.post("/predict", json=deeper)
        chain = client.post("/predict", json={"inputs": {"x": [[[0.0] * 20_000]]}})  # each list one large item
    assert answer.status_code == 422 and "has shape [20000, 1, 4]; the model takes [?, 4]" in answer.json()["detail"]
    assert chain.status_code == 422 and "nested deeper than the 2 dimensions it takes" in chain.json()["detail"]
