"""The cluster backend against a real two-node Ray cluster on this machine (core.jobs.cluster.local): each node in
its own network namespace, so traffic stays on test addresses and a node can be killed like a host.

The cluster starts once for the file. Clients run inside the head's namespace (as a subprocess: the command line,
or tests/cluster/driver.py). The test that kills node2 runs last. Skipped where namespaces cannot be made
(not root, no ``ip``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.jobs.cluster import local
from core.settings import PROJECT_ROOT
from tests import builders

ROOT = Path("/tmp/wb-test-cluster")  # short: Ray's socket paths live under it


def _can_make_namespaces() -> str:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    return ""


@pytest.fixture(scope="module")
def cluster() -> Iterator[local.LocalCluster]:
    if why := _can_make_namespaces():
        pytest.skip(why)
    try:
        started = local.start(ROOT)
        yield started
    finally:
        local.stop(ROOT)
        shutil.rmtree(ROOT, ignore_errors=True)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("model")
    return builders.exported_sample("tinycnn", folder)


def _env(data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "WORKBENCH_CLUSTER_ADDRESS": local.ADDRESS,
        "WORKBENCH_DATA_DIR": str(data_dir),
    }


def _in_head(*command: str, data_dir: Path, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        local.in_head([sys.executable, *command]),
        env=_env(data_dir),
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _cli(*args: str, data_dir: Path) -> subprocess.Popen[str]:
    return _in_head("-m", "core", *args, data_dir=data_dir)


def _events(out: str) -> dict[str, Any]:
    """The driver's events by case (Ray prints its own lines among them: a node's death, for one)."""
    return {e["case"]: e for e in (json.loads(line) for line in out.splitlines() if line.startswith('{"case"'))}


def _json_of(proc: subprocess.Popen[str], timeout: float = 180) -> Any:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def test_targets_lists_both_nodes_with_their_hardware_and_providers(
    cluster: local.LocalCluster, tmp_path: Path
) -> None:
    listing = _json_of(_cli("targets", "--json", data_dir=tmp_path))
    rows = {row["name"]: row for row in listing["targets"]}
    assert set(rows) == {"this server", "head", "node2"}, rows
    assert rows["node2"]["address"] == "10.78.0.2" and rows["node2"]["status"] == "alive"
    for row in rows.values():
        assert "CPUExecutionProvider" in row["hardware"]["providers"]
        assert row["hardware"]["physical_cores"] >= 1 and row["hardware"]["cpu"]


def test_benchmarks_on_two_targets_run_at_once_and_both_are_saved(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """The issue's first check: a benchmark sent to node2 runs there (its environment says so) while another
    runs on head at the same time; both land in the history, each under its target."""
    bench = ("bench", str(model), "--no-eager", "--levels", "all", "--threads", "1", "--iters", "8000")
    runs = {
        name: _cli(*bench, "--warmup", "2", "--target", name, "--json", data_dir=tmp_path) for name in ("node2", "head")
    }
    reports = {name: _json_of(proc) for name, proc in runs.items()}
    for name, report in reports.items():
        assert report["environment"]["target"] == name
    (a0, a1), (b0, b1) = ((r["started"], r["finished"]) for r in reports.values())
    assert a0 < b1 and b0 < a1, f"the two benchmarks did not overlap: {reports['node2']['started']}…"
    history = _json_of(_cli("history", "--json", data_dir=tmp_path), timeout=60)
    assert sorted(r["machine"] for r in history) == ["head", "node2"]
    # the model travelled to node2 once, into its cache, by its content hash
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert (cluster.data_dir("node2") / "cluster-cache" / sha).is_file()


def test_profile_quantize_and_partition_run_on_the_target_they_are_sent_to(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """The other three commands with --target: their JSON names the target; quantize's file comes back here."""
    out = tmp_path / "tinycnn.int8.onnx"
    commands = {
        "profile": ("profile", str(model), "--no-eager", "--iters", "10", "--warmup", "1", "--threads", "1"),
        "quantize": ("quantize", str(model), "--mode", "dynamic", "-o", str(out), "--iters", "5"),
        "partition": ("partition", str(model)),
    }
    runs = {name: _cli(*args, "--target", "node2", "--json", data_dir=tmp_path) for name, args in commands.items()}
    reports = {name: _json_of(proc) for name, proc in runs.items()}
    assert {name: r["environment"]["target"] for name, r in reports.items()} == dict.fromkeys(commands, "node2")
    assert reports["profile"]["nodes"] and reports["partition"]["providers"] == {"CPUExecutionProvider": 8}
    assert reports["quantize"]["output"] == str(out) and out.is_file() and out.stat().st_size > 0


def test_a_missing_target_is_named_with_the_ones_there_are(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    proc = _cli("bench", str(model), "--target", "nowhere", data_dir=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "no target called 'nowhere'" in err and "head, node2" in err


def test_the_queue_and_every_ending_cross_the_cluster_as_they_are_here(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """Benchmarks sent to one target queue for it and never overlap; a job's own error, the time limit and
    cancel come back as locally; an agent killed on a node that lives gets the job again."""
    proc = _in_head("-m", "tests.cluster.driver", "errors", str(model), str(tmp_path / "out"), data_dir=tmp_path)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    events = _events(out)
    assert events["exclusive"]["positions"] == [0] and events["exclusive"]["overlap"] is False
    assert events["own error"]["error"] == "BenchmarkError" and "not in this build" in events["own error"]["message"]
    assert events["timeout"]["error"] == "JobTimedOut" and "limit of 2 s" in events["timeout"]["message"]
    assert events["cancel"]["error"] == "JobCancelled" and events["cancel"]["state"] == "cancelled"
    assert events["agent killed"] == {"case": "agent killed", "tries": 2, "state": "done", "target": "node2"}


def _lose_node2_mid_benchmark(tmp_path: Path, lose: Callable[[], None], model: Path) -> dict[str, Any]:
    """The driver's events when node2 is lost by ``lose()`` while its benchmark runs (head runs one too)."""
    proc = _in_head(
        "-m", "tests.cluster.driver", "lost", str(model), str(tmp_path), data_dir=tmp_path, stdin=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    running = next((json.loads(line) for line in proc.stdout if line.startswith('{"case"')), {})
    assert running.get("case") == "running", proc.stderr.read()[-3000:] if proc.stderr else ""
    assert running["state"] == "running" and running["progress"], running  # progress crossed the cluster
    lose()
    proc.stdin.write("lost\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    return _events(out)


def _assert_node2_lost_and_head_working(events: dict[str, Any], began: float) -> None:
    lost = events["node2"]
    assert lost["error"] == "TargetLost" and lost["state"] == "failed"
    assert "target 'node2' was lost" in lost["message"] and "run it again on another target" in lost["message"]
    assert events["node2"]["seconds"] < 30 and time.monotonic() - began < 90
    assert events["head"] == {"case": "head", "state": "done", "target": "head"}
    assert events["head after"] == {"case": "head after", "state": "done", "target": "head"}
    assert events["targets"]["targets"] == {"head": "alive", "node2": "gone"}


def test_node2_cut_off_mid_benchmark_ends_its_job_clearly_and_head_keeps_working(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """Its link down: node2's processes live on, unreachable, until the cluster declares it dead."""
    began = time.monotonic()
    try:
        events = _lose_node2_mid_benchmark(tmp_path, lambda: local.cut_off(local.NODE2), model)
    finally:
        local.restart_node(local.NODE2, ROOT)  # for the tests after this one
    _assert_node2_lost_and_head_working(events, began)


def test_killing_node2_mid_benchmark_ends_its_job_clearly_and_head_keeps_working(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """The issue's second check: node2 killed like a host losing power (runs last but one: node2 stays dead)."""
    began = time.monotonic()
    events = _lose_node2_mid_benchmark(tmp_path, lambda: _killed(local.NODE2), model)
    _assert_node2_lost_and_head_working(events, began)


def _killed(name: str) -> None:
    assert local.kill_node(name, ROOT) > 0


def test_the_app_offers_the_targets_marks_the_lost_one_gone_and_benchmarks_on_the_one_picked(
    cluster: local.LocalCluster, tmp_path: Path
) -> None:
    """In Chromium, after node2 was killed: the sidebar's "Run on" lists this server, head and node2 as gone;
    a benchmark run with head picked says it ran there."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, wait_for_app, wait_idle

    url = f"http://{local.APP_ADDRESS}:8597"
    serve = ("-m", "core", "serve", "--port", "8597", "--address", local.APP_ADDRESS)
    app = _in_head(*serve, data_dir=tmp_path, start_new_session=True)
    try:
        wait_for_app(url, app, "the app's output")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            wait_idle(page)
            page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').click()
            assert page.locator('[role="option"]').all_inner_texts() == ["this server", "head", "node2 (gone)"]
            page.locator('[role="option"]', has_text="head").click()
            wait_idle(page)
            page.get_by_role("link", name="Benchmark", exact=True).click()
            page.get_by_role("button", name="Export with the defaults and continue").click()
            wait_idle(page, 120_000)
            page.get_by_role("button", name="Run the benchmark").click()
            wait_idle(page, 180_000)
            shown = " ".join(page.locator('[data-testid="stMain"]').inner_text().split())
            assert "The machine value target head machine" in shown, shown[-2000:]
            browser.close()
    finally:
        os.killpg(app.pid, signal.SIGKILL)
        app.communicate(timeout=30)
