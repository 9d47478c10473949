"""What every test shares: which tests need the machine to themselves, and a data folder that is never the user's.

`make test` runs the suite in two parts: first every other test on four processes at once (most of their time is
spent waiting on a worker, a server or the browser), then these, one at a time, on a quiet machine: they measure
time or what else the machine does, or look for processes and files that any other test could leave. A file
whose tests all need it is listed here; a test that needs it in a file of others is marked `@pytest.mark.quiet`.

The default data folder is the user's own (core.settings.user_data_folder: under $XDG_DATA_HOME). Tests set
WORKBENCH_DATA_DIR where they use one; for any that does not, $XDG_DATA_HOME points into a folder of this run's,
made by the first pytest process (its xdist workers inherit it) and removed by it at the end.

With WORKBENCH_TEST_CPU=FILE, each test appends a line to FILE: its id, the CPU-seconds it cost with everything it
started (the servers, workers and browsers of the fixtures it set up first: counted in a cgroup of the test
process's own where it may make one, as root), and its wall seconds;
`benchmarks/suite_cpu.py FILE` sums them by file. The parallel part is CPU-bound on two cores, so CPU, not wall
time, says what a test costs the suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

QUIET = {
    "tests/unit/test_activity.py",  # busy or idle, seen from the machine-wide counters
    "tests/unit/test_profile.py",  # the kernels' share of a call
    "tests/app/test_profile_page.py",
    "tests/e2e/test_profile_e2e.py",  # which op takes the most
    "tests/app/test_benchmark_page.py",  # a run on a busy machine, and one on a quiet one
    "tests/e2e/test_many_users_e2e.py",  # four browsers; the landing page's time while they queue
    "tests/e2e/test_upload_memory_e2e.py",  # the server's memory at its peak
    "tests/adversarial/test_leftovers.py",  # files any test run leaves in /tmp
    "tests/adversarial/test_orphans.py",  # worker processes left behind
    "tests/adversarial/test_million_initializers.py",  # a refusal within 10 s, on two cores
}
# The files that take longest (the sum of their tests' wall times in `make test`'s parallel part, largest first):
# they are handed out first, so that no long file starts last and runs alone while the other processes are done.
# Every other file follows in its own order. Re-measure with `--durations=0` when the suite changes much.
LONGEST_FIRST = (
    "tests/cluster/test_cluster.py",  # 200-240 s here (140 CPU-s): a two-node Ray cluster, started once for the file
    "tests/adversarial/test_hostile_inputs.py",  # 290 s, of which the 100,001-node page 100-140 s
    "tests/app/test_real_models_pages.py",
    "tests/unit/test_export.py",
    "tests/app/test_language.py",
    "tests/e2e/test_hostile_e2e.py",
    "tests/e2e/test_chinese_crawl.py",
    "tests/e2e/test_team_e2e.py",  # one walk, 50-110 s: a hosted server whose workers start ahead with torch
    "tests/app/test_export_page.py",
    "tests/e2e/test_model_page_e2e.py",
    "tests/e2e/test_benchmark_e2e.py",
    "tests/e2e/test_decode_e2e.py",
    "tests/e2e/test_partition_e2e.py",
    "tests/e2e/test_quantize_e2e.py",
    "tests/e2e/test_sign_in_e2e.py",
    "tests/adversarial/test_fuzz.py",
    "tests/adversarial/test_sandbox.py",
    "tests/e2e/test_markup_crawl_e2e.py",
    "tests/app/test_model_links.py",
    "tests/e2e/test_real_models_e2e.py",
    "tests/e2e/test_graph_html_e2e.py",
    "tests/app/test_partition_page.py",
    "tests/e2e/test_classroom_e2e.py",
    "tests/e2e/test_export_e2e.py",
)
ROOT = Path(__file__).resolve().parent.parent


_CGROUPS = ((Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"), (Path("/sys/fs/cgroup"), "cpu.stat"))  # v1, v2


def _own_cgroup() -> Path | None:
    """A CPU-accounting cgroup of this test process's own, which everything it starts is born into (a sandboxed
    worker is reaped outside this process's tree, so only a cgroup sees all its CPU), or None where none can be
    made (not root, no cgroup file system)."""
    pid = str(os.getpid())
    for base, usage in _CGROUPS:
        if not (base / usage).exists() or not os.access(base, os.W_OK):
            continue
        group = base / f"workbench-test-{pid}"
        try:
            group.mkdir(exist_ok=True)
            (group / "cgroup.procs").write_text(pid)
        except OSError:
            continue
        return group / usage
    return None


_usage_file: list[Path | None] = []


def _cpu_so_far() -> float:
    """CPU-seconds of this process and everything it started: from its own cgroup where one could be made, else
    from the process tree (which misses what was reaped outside it)."""
    if not _usage_file:
        _usage_file.append(_own_cgroup())
    usage = _usage_file[0]
    if usage is not None:
        text = usage.read_text()
        if usage.name == "cpu.stat":
            return int(text.split("usage_usec", 1)[1].split()[0]) / 1e6
        return int(text) / 1e9
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in (me, *me.children(recursive=True)):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    log = os.environ.get("WORKBENCH_TEST_CPU")
    if not log:
        yield
        return
    import time

    cpu, wall = _cpu_so_far(), time.monotonic()
    yield
    line = f"{item.nodeid}\t{_cpu_so_far() - cpu:.2f}\t{time.monotonic() - wall:.2f}\n"
    with open(log, "a", encoding="utf-8") as out:  # one short append per test: the xdist workers' lines never mix
        out.write(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    where = {id(item): Path(str(item.path)).resolve().relative_to(ROOT).as_posix() for item in items}
    for item in items:
        if where[id(item)] in QUIET:
            item.add_marker(pytest.mark.quiet)
    items.sort(key=lambda item: rank.get(where[id(item)], len(rank)))  # stable: each file's own order is kept


_OWN_DATA_HOME = "WORKBENCH_TESTS_DATA_HOME"  # set by the pytest process that made the folder
_made = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(_OWN_DATA_HOME):  # an xdist worker: its controller made it
        return
    home = tempfile.mkdtemp(prefix="workbench-tests-data-")
    os.environ[_OWN_DATA_HOME] = os.environ["XDG_DATA_HOME"] = home
    # the default cache folder too (the samples' exports, core.export.reuse): shared by the run's tests, as by a
    # server's sessions, and gone with the run
    os.environ["XDG_CACHE_HOME"] = os.path.join(home, "cache")
    config.stash[_made] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    if _usage_file and _usage_file[0] is not None:  # back to where it was, and the emptied group removed
        group = _usage_file[0].parent
        try:
            (group.parent / "cgroup.procs").write_text(str(os.getpid()))
            group.rmdir()
        except OSError:  # a process it started is still ending: the first pytest process removes it below
            pass
    home = config.stash.get(_made, "")
    if home and os.environ.get("WORKBENCH_TEST_CPU"):
        for base, _usage in _CGROUPS:
            for group in base.glob("workbench-test-*"):
                with contextlib.suppress(OSError):  # only an empty one goes: a live test process is in its own
                    group.rmdir()
    if home:
        shutil.rmtree(home, ignore_errors=True)


_MAIN = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def _main_module_kept() -> Iterator[None]:
    """Streamlit runs a page as the module ``__main__`` and leaves it in ``sys.modules``; a later test in the same
    process that starts a ``spawn`` process (its child re-runs the parent's ``__main__`` file) would start the
    app there instead (CI saw four such children run a page and exit 1). Every test begins and ends with the
    process's own ``__main__``, kept when this file was imported: a page run by a module's fixture, or by a script
    thread still ending after its test, leaves its module outside any one test's span."""
    sys.modules["__main__"] = _MAIN
    yield
    sys.modules["__main__"] = _MAIN


@pytest.fixture(autouse=True, scope="session")
def _lighter_app_tests() -> None:
    """Two costs of every AppTest that buy nothing here. Each runtime scans all installed packages' metadata for
    components (about 0.7 CPU-s, as much as the rest of a small page); the packages cannot change during a test
    process, so the first scan's answer serves every later one. And AppTest waits for a script run by polling its
    event list every millisecond, a few CPU-seconds per file of tests that wait on workers; every 20 ms is
    enough for a run that takes seconds."""
    import functools
    import time

    from streamlit.components.v2 import manifest_scanner
    from streamlit.testing.v1 import local_script_runner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)  # type: ignore[method-assign]

    def wait_for_the_run(runner: local_script_runner.LocalScriptRunner, timeout: float = 3) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if runner.script_stopped():
                return
            time.sleep(0.02)
        runner.request_stop()
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    local_script_runner.require_widgets_deltas = wait_for_the_run
