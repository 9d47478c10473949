"""Where the test suite's CPU goes: the lines tests/conftest.py writes with WORKBENCH_TEST_CPU=FILE, summed by file.

    WORKBENCH_TEST_CPU=/tmp/cpu.tsv make test
    .venv/bin/python benchmarks/suite_cpu.py /tmp/cpu.tsv [--tests 20]

Prints each test file's CPU-seconds (its tests with all they started: servers, workers, browsers) and wall
seconds, largest first, then the most costly tests. On two cores the parallel part's wall time is about its CPU
over two, so the CPU column is what a test costs the suite.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--tests", type=int, default=20, help="how many of the most costly tests to list")
    args = parser.parse_args()
    rows = []
    for line in args.log.read_text(encoding="utf-8").splitlines():
        nodeid, cpu, wall = line.rsplit("\t", 2)
        rows.append((nodeid, float(cpu), float(wall)))
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, cpu, wall in rows:
        entry = by_file[nodeid.split("::", 1)[0]]
        entry[0] += cpu
        entry[1] += wall
        entry[2] += 1
    total = sum(cpu for _, cpu, _ in rows)
    print(f"{len(rows)} tests, {total:.0f} CPU-s in all ({total / 120:.1f} minutes of two cores)")
    print(f"{'CPU-s':>7} {'share':>6} {'wall-s':>7} {'tests':>5}  file")
    for name, (cpu, wall, count) in sorted(by_file.items(), key=lambda kv: -kv[1][0]):
        print(f"{cpu:7.0f} {cpu / total:6.1%} {wall:7.0f} {count:5.0f}  {name}")
    print(f"\nthe {args.tests} most costly tests:")
    for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[: args.tests]:
        print(f"{cpu:7.1f} {wall:7.1f}  {nodeid}")


if __name__ == "__main__":
    main()
