"""What a large result costs at the worker boundary: the decode of a 30,000-node model, encoded in the worker
and decoded into dataclasses in the server, with the wire format the app uses (msgspec, MessagePack) and,
when it is installed, pydantic's TypeAdapter (the runner-up when the format was chosen); then the whole job
and `python -m core inspect --json` on that model against TinyCNN.

Run: .venv/bin/python benchmarks/boundary.py [--nodes 30000] [--repeat 3]
Each figure is the best of --repeat runs, measured side by side in one process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.decode import DecodedModel, DecodeRequest, decode_model
from core.jobs import DECODE, run
from core.jobs.wire import decode, encode
from tests.builders import chain_model, exported_sample, write

ROOT = Path(__file__).resolve().parent.parent


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def _pydantic(decoded: DecodedModel, repeat: int) -> None:
    try:
        import pydantic
    except ImportError:
        print("pydantic TypeAdapter        not installed here, skipped")
        return
    adapter = pydantic.TypeAdapter(DecodedModel)
    dump_s, data = best(lambda: adapter.dump_json(decoded), repeat)
    load_s, again = best(lambda: adapter.validate_json(data), repeat)
    assert again == decoded
    print(f"pydantic TypeAdapter (JSON) encode {dump_s:6.3f} s  decode {load_s:6.3f} s  ({len(data) / 1e6:.1f} MB)")


def _cli_seconds(path: Path, repeat: int) -> float:
    command = [sys.executable, "-m", "core", "inspect", str(path), "--json"]
    seconds, _ = best(lambda: subprocess.run(command, cwd=ROOT, check=True, capture_output=True), repeat)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = write(chain_model(args.nodes), Path(tmp) / f"chain{args.nodes}.onnx")
        small = exported_sample("tinycnn", Path(tmp))
        decode_s, decoded = best(lambda: decode_model(DecodeRequest(path=str(big), with_text=False)), 1)
        print(f"{args.nodes:,}-node model: decode in process {decode_s:.2f} s; {len(decoded.nodes):,} nodes listed")
        encode_s, data = best(lambda: encode(decoded), args.repeat)
        load_s, again = best(lambda: decode(data, DecodedModel), args.repeat)
        assert again == decoded, "the round trip changed the result"
        print(
            f"msgspec MessagePack (used) encode {encode_s:6.3f} s  decode {load_s:6.3f} s  ({len(data) / 1e6:.1f} MB)"
            f"  -> boundary {encode_s + load_s:.3f} s"
        )
        _pydantic(decoded, args.repeat)
        job_s, _ = best(lambda: run(DECODE, DecodeRequest(path=str(big), with_text=False)), 1)
        print(f"decode.run job, worker start to typed result in the caller: {job_s:.2f} s")
        big_cli, small_cli = _cli_seconds(big, 1), _cli_seconds(small, 1)
        print(
            f"python -m core inspect --json: {big_cli:.2f} s on {args.nodes:,} nodes, {small_cli:.2f} s on TinyCNN "
            f"({big_cli / small_cli:.1f}x)"
        )


if __name__ == "__main__":
    main()
