"""Where a command's CPU goes, by kind of process: job workers, Chromium, Python processes, Ray, PostgreSQL.

    sudo .venv/bin/python benchmarks/suite_processes.py            # make test
    sudo .venv/bin/python benchmarks/suite_processes.py -- CMD...  # any command
    .venv/bin/python benchmarks/suite_processes.py --read FILE     # an accounting file kept with --keep FILE

Linux's process accounting (acct(2), root only) writes a record for every process of the machine as it ends: its
CPU, its parent and its name. Unlike a test's cgroup (WORKBENCH_TEST_CPU) it counts what no test owns, and unlike
sampling it misses no short process: a job's worker lives half a second. The machine's other processes are
counted too, so run it on a quiet machine. A process is counted when it ends; one still running when the command
ends (a server left behind) is not.

Kinds, by a process's name and its ancestors' (a record is named after the last thread of the process to end,
often a thread's name): a job worker is a Python process whose parent is bubblewrap; Chromium and Ray are told by
the names their processes and threads take (Ray's by gRPC's threads); the rest of Python is pytest, the app
servers, the command lines and lint. The kinds are close, not exact: a name no list knows goes to "other".
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3: 64 bytes


@dataclass
class Process:
    pid: int
    ppid: int
    cpu: float
    name: str
    parent: Process | None = None


def _comp(value: int) -> int:
    """A comp_t: 13 bits of mantissa, 3 of base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def read(path: Path) -> list[Process]:
    """The records of an accounting file, in the order the processes ended, each linked to its parent's."""
    data = path.read_bytes()
    records = []
    for offset in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        f = _RECORD.unpack_from(data, offset)
        if f[1] != 3:
            raise SystemExit(f"{path}: not a version-3 accounting file")
        ticks = _comp(f[10]) + _comp(f[11])  # user + system, in AHZ (100 per second)
        records.append(
            Process(pid=f[6], ppid=f[7], cpu=ticks / 100, name=f[18].split(b"\0")[0].decode(errors="replace"))
        )
    # a parent ends after its children: the parent of a record is the next record to end with that pid
    latest: dict[int, Process] = {}
    for record in reversed(records):
        record.parent = latest.get(record.ppid)
        latest[record.pid] = record
    return records


# names a process of theirs ends with: the last thread to end names the record
_CHROMIUM = ("chromium", "chrome", "Chrome_", "CrBrowserMain", "CrRendererMain", "sandbox_ipc_thr", "HangWatcher")
_CHROMIUM += ("ThreadPool", "PerfettoTrace")
_RAY = ("ray::", "raylet", "gcs_", "grpc_", "resolver-execut", "default-executo", "client.poll", "event_engine")
_RAY += ("timer_manager", "PipeReaderThd", "PipeDumpThd", "nexting_thread", "task_event_buff", "worker.user_obj")


WORKERS = "job workers (sandboxed)"


def kind(process: Process) -> str:
    if process.name.startswith("python") and process.parent is not None and process.parent.name == "bwrap":
        return WORKERS
    node: Process | None = process
    while node is not None:
        if node.name.startswith(_CHROMIUM):
            return "Chromium"
        if node.name.startswith(_RAY):
            return "Ray"
        if node.name.startswith("node") or node.name == "libuv-worker":
            return "Playwright's driver (node)"
        node = node.parent
    if process.name.startswith(("postgres", "initdb", "psql")):
        return "PostgreSQL"
    if process.name == "bwrap":
        return "bubblewrap"
    if process.name.startswith(("python", "pytest", "jemalloc_bg_thd", "mypy")) or process.name == "make":
        return "other Python (pytest, app servers, command lines, lint)"
    return "other"


def report(records: list[Process]) -> None:
    total = sum(r.cpu for r in records)
    print(f"{len(records)} processes ended, {total:.0f} CPU-s in all")
    cpu: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    kinds = [(kind(record), record) for record in records]  # each walks up its ancestry once
    for name, record in kinds:
        cpu[name] += record.cpu
        count[name] += 1
    print(f"{'CPU-s':>7} {'share':>6} {'count':>6}  kind")
    for name, seconds in cpu.most_common():
        print(f"{seconds:7.1f} {seconds / max(total, 1e-9):6.1%} {count[name]:6d}  {name}")
    workers = sorted(record.cpu for name, record in kinds if name == WORKERS)
    if workers:
        print(f"\njob workers: median {workers[len(workers) // 2]:.2f} CPU-s; by CPU each:")
        for low, high in ((0, 0.3), (0.3, 0.5), (0.5, 1), (1, 2), (2, 4), (4, 1e9)):
            some = [w for w in workers if low <= w < high]
            print(f"  {low:>4}–{high if high < 1e9 else '':<4} s: {len(some):5d} workers, {sum(some):7.1f} CPU-s")


def _acct(path: Path | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(path).encode() if path else None) != 0:
        raise SystemExit(f"acct: {os.strerror(ctypes.get_errno())} (process accounting needs root)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read", type=Path, help="report on an accounting file kept before")
    parser.add_argument("--keep", type=Path, help="keep the accounting file here")
    parser.add_argument("command", nargs="*", help="the command to run (default: make test)")
    args = parser.parse_args()
    if args.read:
        report(read(args.read))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / "pacct"
        path.write_bytes(b"")
        _acct(path)
        began = time.monotonic()
        try:
            code = subprocess.call(args.command or ["make", "test"], cwd=ROOT)
        finally:
            _acct(None)
        print(f"the command ended with {code} after {time.monotonic() - began:.0f} s")
        report(read(path))


if __name__ == "__main__":
    main()
