"""Partition's session over every model of onnx's backend test suite that ships in the onnx wheel: how many open,
how many ONNX Runtime refuses and with which kind of message; with --upgrade, each refused old model upgraded
(onnx's version converter, core.upgrade) and partitioned again.

Run: .venv/bin/python benchmarks/backend_suite.py [--upgrade] [--opset 18] [--verbose]
Everything runs in this process (the partition and upgrade jobs' own functions), one model after another. Exit
code 1 when a refusal shows only ONNX Runtime's own words (a kind core.runtime.refusals does not know).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.errors import OldOpsetError, RuntimeRefusedError, WorkbenchError  # noqa: E402
from core.model.inputs import plan_inputs  # noqa: E402
from core.model.intake import IntakeRequest, describe_files  # noqa: E402
from core.partition import PartitionRequest  # noqa: E402
from core.partition.partitioner import partition_model  # noqa: E402
from core.upgrade import UpgradeRequest  # noqa: E402
from core.upgrade.converter import upgrade_model  # noqa: E402

KINDS = {  # words in our message -> the kind of refusal
    "older than ONNX Runtime": "old opset (upgrade offered)",
    "training operators": "training op (ai.onnx.preview.training)",
    "does not have that locale": "locale the machine lacks",
    "custom ops": "custom domain",
}


def suite() -> list[Path]:
    import onnx

    return sorted((Path(onnx.__file__).parent / "backend" / "test" / "data").rglob("*.onnx"))


def kind_of(exc: WorkbenchError) -> str:
    if isinstance(exc, RuntimeRefusedError):
        return next((kind for words, kind in KINDS.items() if words in str(exc)), "refused, in our words")
    return "ONNX Runtime's own words (after ours)"


def partition(path: Path) -> WorkbenchError | None:
    try:
        partition_model(PartitionRequest(path=str(path)))
    except WorkbenchError as exc:
        return exc
    return None


def upgraded(path: Path, opset: int, folder: Path) -> str:
    """What became of an old model: upgraded, checked against what, and whether Partition then opens it."""
    record = describe_files(IntakeRequest(paths=[str(path)]))
    try:
        request = UpgradeRequest(path=str(path), opset=opset, inputs=plan_inputs(record), out_dir=str(folder))
        report = upgrade_model(request)
    except WorkbenchError as exc:
        return f"not upgraded: {type(exc).__name__}"
    if not report.ok:
        return "upgraded, FAILED its checks"
    against = "ORT" if "ONNX Runtime" in report.compared_with.split("(")[0] else "reference evaluator"
    if not report.compared_with:
        against = "checker and shape inference only"
    opens = "opens" if partition(Path(report.path)) is None else "STILL REFUSED"
    return f"upgraded, matches ({against}), {opens}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upgrade", action="store_true", help="upgrade every old model and partition it again")
    parser.add_argument("--opset", type=int, default=18, help="the opset to upgrade to (default 18)")
    parser.add_argument("--verbose", action="store_true", help="every refusal's message")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # ONNX Runtime's native log lines, not ours
    models = suite()
    started = time.perf_counter()
    kinds: Counter[str] = Counter()
    after: Counter[str] = Counter()
    for path in models:
        refusal = partition(path)
        kinds["opens" if refusal is None else kind_of(refusal)] += 1
        if refusal is not None and args.verbose:
            print(f"{path.parent.name or path.name}: {refusal}\n")
        if isinstance(refusal, OldOpsetError) and args.upgrade:
            with tempfile.TemporaryDirectory() as folder:
                after[upgraded(path, args.opset, Path(folder))] += 1
    print(f"{len(models)} models of onnx's backend test suite, in {time.perf_counter() - started:.0f} s:")
    for kind, count in kinds.most_common():
        print(f"  {count:>4}  {kind}")
    if after:
        print(f"the old ones, upgraded to opset {args.opset}:")
        for outcome, count in after.most_common():
            print(f"  {count:>4}  {outcome}")
    return 1 if kinds["ONNX Runtime's own words (after ours)"] else 0


if __name__ == "__main__":
    sys.exit(main())
