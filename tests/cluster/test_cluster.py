"""The cluster backend against a real two-node Ray cluster on this machine (core.jobs.cluster.local): each node in
its own network namespace, so traffic stays on test addresses and a node can be killed like a host; token
authentication on, as on every cluster the project starts.

The cluster starts once for the file, in a slot of its own (a developer's ``make cluster`` may run beside it).
Clients run inside the head's namespace (as a subprocess: the command line, or tests/cluster/driver.py), with the
cluster's token; a peer without it runs in node2's. The test that kills node2 runs last. Skipped where namespaces
cannot be made (not root, no ``ip``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from core.jobs.cluster import local
from core.settings import PROJECT_ROOT
from tests import builders

ROOT = Path(f"/tmp/wbt-{local.DEFAULT_ROOT.name.removeprefix('wbc-')}")  # this checkout's; short (Ray's sockets)


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
        started = local.start(ROOT, hold=True)
        yield started
    finally:
        local.stop(ROOT)
        shutil.rmtree(ROOT, ignore_errors=True)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("model")
    return builders.exported_sample("tinycnn", folder)


def _env(cluster: local.LocalCluster, data_dir: Path) -> dict[str, str]:
    """A client's environment: the cluster's address and where its token is (as `make cluster-run` gives it)."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")},
        "PYTHONPATH": str(PROJECT_ROOT),
        **cluster.client_env(),
        "WORKBENCH_DATA_DIR": str(data_dir),
    }


def _in_head(
    cluster: local.LocalCluster, *command: str, data_dir: Path, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cluster.in_namespace([sys.executable, *command]),
        env=env or _env(cluster, data_dir),
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _cli(cluster: local.LocalCluster, *args: str, data_dir: Path, env: dict[str, str] | None = None) -> Any:
    return _in_head(cluster, "-m", "core", *args, data_dir=data_dir, env=env)


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
    listing = _json_of(_cli(cluster, "targets", "--json", data_dir=tmp_path))
    rows = {row["name"]: row for row in listing["targets"]}
    assert set(rows) == {"this server", "head", "node2"}, rows
    assert rows["node2"]["address"] == cluster.slot.ip(local.NODE2) and rows["node2"]["status"] == "alive"
    for row in rows.values():
        assert "CPUExecutionProvider" in row["hardware"]["providers"]
        assert row["hardware"]["physical_cores"] >= 1 and row["hardware"]["cpu"]


def test_a_peer_without_the_token_can_neither_join_nor_run_a_task(cluster: local.LocalCluster, tmp_path: Path) -> None:
    """The hostile tester's case, from node2's network namespace (another host, as far as the network goes): a
    client with no token, and one with a made-up token, try to join and run a task on head that copies
    /etc/shadow. Ray refuses both at the door (its log names the token), and the task never runs."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    base |= {"PYTHONPATH": str(PROJECT_ROOT), "RAY_gcs_server_port_wait_time_s": "1"}
    tries = {
        "no token": base,
        "a made-up token": base | {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)},
    }
    peers = {
        name: subprocess.Popen(
            cluster.in_namespace(
                [sys.executable, "-m", "tests.cluster.peer", cluster.address, str(tmp_path / name)], local.NODE2
            ),
            env=env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, env in tries.items()
    }
    for name, peer in peers.items():
        out, err = peer.communicate(timeout=90)
        ended = json.loads(out.splitlines()[-1])
        assert ended["joined"] is False, (name, ended, err[-2000:])
        assert "InvalidAuthToken" in err, (name, err[-2000:])
        assert not (tmp_path / name).exists()


def test_a_client_without_the_clusters_token_is_refused_with_the_way_to_give_it(
    cluster: local.LocalCluster, tmp_path: Path
) -> None:
    """The command line, with no token, with cluster_insecure but no token (the cluster requires one), with a token
    that is not the cluster's, and with a token file that is not there: each refused before it tries to join (Ray
    would retry for 20 s, or abort on the missing file), saying why, and no message holds the token."""
    good = _env(cluster, tmp_path)
    no_token = {k: v for k, v in good.items() if not k.startswith("RAY_AUTH")}
    wrong = tmp_path / "wrong-token"
    wrong.write_text(secrets.token_hex(32))
    cases = {
        "no token": no_token,
        "insecure": no_token | {"WORKBENCH_CLUSTER_INSECURE": "true"},
        "wrong token": good | {"RAY_AUTH_TOKEN_PATH": str(wrong)},
        "no file": good | {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "nowhere")},
    }
    runs = {name: _cli(cluster, "targets", "--json", data_dir=tmp_path, env=env) for name, env in cases.items()}
    said = {name: _json_of(proc, timeout=60) for name, proc in runs.items()}
    warnings = {name: listing["warning"] for name, listing in said.items()}
    assert all([t["name"] for t in listing["targets"]] == ["this server"] for listing in said.values()), said
    assert (
        "RAY_AUTH_MODE is not 'token'" in warnings["no token"] and "WORKBENCH_CLUSTER_INSECURE" in warnings["no token"]
    )
    assert "requires its token" in warnings["insecure"]
    assert "refuses this process's token" in warnings["wrong token"]
    assert "nowhere cannot be read" in warnings["no file"]
    assert not [name for name, warning in warnings.items() if "Could not join" in warning]  # none tried Ray's 20 s
    token = cluster.token_file.read_text()
    assert not [name for name, warning in warnings.items() if token in warning]


def test_benchmarks_on_two_targets_run_at_once_and_both_are_saved(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """The issue's first check: a benchmark sent to node2 runs there (its environment says so) while another
    runs on head at the same time; both land in the history, each under its target."""
    bench = ("bench", str(model), "--no-eager", "--levels", "all", "--threads", "1", "--iters", "8000")
    runs = {
        name: _cli(cluster, *bench, "--warmup", "2", "--target", name, "--json", data_dir=tmp_path)
        for name in ("node2", "head")
    }
    reports = {name: _json_of(proc) for name, proc in runs.items()}
    for name, report in reports.items():
        assert report["environment"]["target"] == name
    (a0, a1), (b0, b1) = ((r["started"], r["finished"]) for r in reports.values())
    assert a0 < b1 and b0 < a1, f"the two benchmarks did not overlap: {reports['node2']['started']}…"
    history = _json_of(_cli(cluster, "history", "--json", data_dir=tmp_path), timeout=60)
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
    runs = {
        name: _cli(cluster, *args, "--target", "node2", "--json", data_dir=tmp_path) for name, args in commands.items()
    }
    reports = {name: _json_of(proc) for name, proc in runs.items()}
    assert {name: r["environment"]["target"] for name, r in reports.items()} == dict.fromkeys(commands, "node2")
    assert reports["profile"]["nodes"] and reports["partition"]["providers"] == {"CPUExecutionProvider": 8}
    assert reports["quantize"]["output"] == str(out) and out.is_file() and out.stat().st_size > 0


def test_a_missing_target_is_named_with_the_ones_there_are(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    proc = _cli(cluster, "bench", str(model), "--target", "nowhere", data_dir=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "no target called 'nowhere'" in err and "head, node2" in err


def test_the_token_is_readable_by_its_owner_only_and_shown_nowhere(cluster: local.LocalCluster) -> None:
    """256 random bits in a file of mode 0600; on no process's command line, in no log or file of the cluster's
    (Ray's own session logs included) after the runs above."""
    token = cluster.token_file.read_text()
    assert re.fullmatch("[0-9a-f]{64}", token) and stat.S_IMODE(cluster.token_file.stat().st_mode) == 0o600
    shown = [
        p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"]) if token in " ".join(p.info["cmdline"] or [])
    ]
    assert not shown
    files = [p for p in ROOT.rglob("*") if p.is_file() and not p.is_symlink() and p != cluster.token_file]
    assert len(files) > 20 and not [str(p) for p in files if token.encode() in p.read_bytes()]


def test_another_local_cluster_takes_its_own_names_and_addresses(cluster: local.LocalCluster) -> None:
    """A second local cluster (its network only) beside this one gets another slot: other namespaces, links and
    addresses; stopping it leaves this one's. This one, held by this test run, cannot be restarted from outside."""
    other_root = Path(f"{ROOT}-other")
    try:
        other = local.start(other_root, names=())
        assert other.slot != cluster.slot and other.address != cluster.address
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        for name in (local.HEAD, local.NODE2):
            assert other.slot.namespace(name) in names and cluster.slot.namespace(name) in names
    finally:
        local.stop(other_root)
        shutil.rmtree(other_root, ignore_errors=True)
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert other.slot.namespace(local.HEAD) not in names and cluster.slot.namespace(local.HEAD) in names
    again = subprocess.run(
        [sys.executable, "-m", "core.jobs.cluster.local", "--root", str(ROOT), "start"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and f"in use by process {os.getpid()}" in again.stderr, again.stderr
    assert local.status(ROOT)[local.HEAD] > 0


def test_the_queue_and_every_ending_cross_the_cluster_as_they_are_here_and_nothing_is_unpickled(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """Benchmarks sent to one target queue for it and never overlap; a job's own error, the time limit and
    cancel come back as locally; an agent killed on a node that lives gets the job again. Through all of it the
    client unpickles nothing (not one global looked up), and an actor on node2 that answers with a pickled object
    or a pickled exception (as a node replaced by an attacker would) is refused unread."""
    folder = tmp_path / "out"
    proc = _in_head(cluster, "-m", "tests.cluster.driver", "errors", str(model), str(folder), data_dir=tmp_path)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    events = _events(out)
    assert events["exclusive"]["positions"] == [0] and events["exclusive"]["overlap"] is False
    assert events["own error"]["error"] == "BenchmarkError" and "not in this build" in events["own error"]["message"]
    assert events["timeout"]["error"] == "JobTimedOut" and "limit of 2 s" in events["timeout"]["message"]
    assert events["cancel"]["error"] == "JobCancelled" and events["cancel"]["state"] == "cancelled"
    assert events["agent killed"] == {"case": "agent killed", "tries": 2, "state": "done", "target": "node2"}
    assert (
        events["rogue pickled"]["error"] == "TargetError" and "instead of bytes" in events["rogue pickled"]["message"]
    )
    assert events["rogue raises"]["error"] == "JobFailed" and "was not read" in events["rogue raises"]["message"]
    assert events["rogue marker"]["exists"] is False and not (folder / "pwned").exists()
    assert events["unpickled"] == {"case": "unpickled", "globals": [], "insecure": False}


def _lose_node2_mid_benchmark(
    cluster: local.LocalCluster, tmp_path: Path, lose: Callable[[], None], model: Path
) -> dict[str, Any]:
    """The driver's events when node2 is lost by ``lose()`` while its benchmark runs (head runs one too)."""
    driver = ("-m", "tests.cluster.driver", "lost", str(model), str(tmp_path))
    proc = _in_head(cluster, *driver, data_dir=tmp_path, stdin=subprocess.PIPE)
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
        events = _lose_node2_mid_benchmark(cluster, tmp_path, lambda: local.cut_off(cluster, local.NODE2), model)
    finally:
        local.restart_node(cluster, local.NODE2)  # for the tests after this one
    _assert_node2_lost_and_head_working(events, began)


def test_killing_node2_mid_benchmark_ends_its_job_clearly_and_head_keeps_working(
    cluster: local.LocalCluster, model: Path, tmp_path: Path
) -> None:
    """The issue's second check: node2 killed like a host losing power (runs last but one: node2 stays dead)."""
    began = time.monotonic()
    events = _lose_node2_mid_benchmark(cluster, tmp_path, lambda: _killed(local.NODE2), model)
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

    url = f"http://{cluster.app_address}:8597"
    serve = ("-m", "core", "serve", "--port", "8597", "--address", cluster.app_address)
    app = _in_head(cluster, *serve, data_dir=tmp_path, start_new_session=True)
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
