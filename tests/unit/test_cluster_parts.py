"""The parts of the cluster backend that need no cluster: how a job's paths move to a node's copies and its
results' paths move back, which files a node sends back, the errors of a cluster that is not there, and runs
saved under their target. (The backend against a real two-node cluster: tests/cluster/test_cluster.py.)"""

from __future__ import annotations

import dataclasses
import json
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from core.access import READ, WRITE, Access, map_paths
from core.bench import BenchRequest
from core.cli.common import describe, in_own_folder
from core.errors import JobFailed, TargetError
from core.jobs import BENCH, OPTIMIZE, QUANTIZE, Backend, wire
from core.jobs.cluster.agent import TargetAgent, collect_outputs, relocate, with_target
from core.jobs.cluster.answers import Answer, Missing, Status
from core.jobs.cluster.auth import make_token_file
from core.jobs.cluster.client import connect, connected
from core.jobs.cluster.job import file_hash, write_outputs
from core.jobs.registry import signature_of
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.partition import LevelsRequest
from core.quantize import QuantizeRequest
from core.store import Store
from core.store.dashboard import latest_per_model_machine
from tests import builders
from tests.cli import cli
from tests.reports import made_report


def test_every_marked_path_of_a_job_moves_and_nothing_else() -> None:
    """bench.run's model path and an input's data file (a ReadPath inside a list of dataclasses) move; the
    input's name, which looks like a path, does not."""
    signature = signature_of(BENCH.target)
    inputs = [
        BenchInput(name="/in/a/x", dtype="float32", shape=[1, 4], batch_axis=0, values="data", data="/in/a/x.npy")
    ]
    request = BenchRequest(model=MeasuredModel(path="/in/a/model.onnx", inputs=inputs))
    seen: list[tuple[Access, str]] = []

    def move(access: Access, path: str) -> str:
        seen.append((access, path))
        return "/node" + path

    sent = map_paths(request, signature.marked["request"], move)
    assert sent.model.path == "/node/in/a/model.onnx" and request.model.path == "/in/a/model.onnx"
    (moved,) = sent.model.inputs
    assert moved.data == "/node/in/a/x.npy" and moved.name == "/in/a/x" and inputs[0].data == "/in/a/x.npy"
    assert seen == [(READ, "/in/a/model.onnx"), (READ, "/in/a/x.npy")]
    quantize = signature_of(QUANTIZE.target)
    asked = QuantizeRequest(model=MeasuredModel(path="/in/m.onnx", inputs=[]), out_dir="/out/q", variants=["fp16"])
    changed = map_paths(asked, quantize.marked["request"], lambda a, p: f"{a.mode}:{p}")
    assert changed.out_dir == f"{WRITE.mode}:/out/q" and changed.model.path == f"{READ.mode}:/in/m.onnx"


def test_a_result_names_the_callers_files_and_its_target() -> None:
    report = made_report("r1", machine="vm")
    report.notes = ["/node/jobs/1/out/0/model.q.onnx", "/node/jobs/1/out/01/other", "/node/jobs/1/out/0"]
    moved = with_target(relocate(report, {"/node/jobs/1/out/0": "/home/me/out"}), "gpu-a")
    assert moved.notes == ["/home/me/out/model.q.onnx", "/node/jobs/1/out/01/other", "/home/me/out"]
    assert moved.environment.target == "gpu-a" and moved.environment.machine == "vm"
    assert moved.environment.place == "gpu-a" and report.environment.place == "vm"
    assert with_target({"no": "environment"}, "gpu-a") == {"no": "environment"}


def test_a_node_sends_back_only_plain_files_the_job_wrote_in_its_folders(tmp_path: Path) -> None:
    here = tmp_path / "out"
    (here / "sub").mkdir(parents=True)
    (here / "model.onnx").write_bytes(b"onnx")
    (here / "sub" / "data.bin").write_bytes(b"data")
    secret = tmp_path / "secret"
    secret.write_text("not the job's")
    (here / "link").symlink_to(secret)
    assert sorted(collect_outputs([(here, "/caller/out")])) == [
        ("/caller/out", "model.onnx", b"onnx"),
        ("/caller/out", "sub/data.bin", b"data"),
    ]


@pytest.mark.parametrize("relative", ["../escape", "/etc/passwd", "a/../../b", ""])
def test_a_file_sent_back_outside_the_jobs_folders_is_refused(tmp_path: Path, relative: str) -> None:
    folder = str(tmp_path / "out")
    with pytest.raises(JobFailed, match="outside its folders"):
        write_outputs([(folder, relative, b"x")], [folder], "quantize.run")
    with pytest.raises(JobFailed, match="outside its folders"):
        write_outputs([(str(tmp_path), "x", b"x")], [folder], "quantize.run")  # a folder it was not given
    assert not (tmp_path / "escape").exists()
    write_outputs([(folder, "sub/model.onnx", b"onnx")], [folder], "quantize.run")
    assert (tmp_path / "out" / "sub" / "model.onnx").read_bytes() == b"onnx"


def test_a_files_hash_is_computed_once_until_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"first")
    first = file_hash(path)
    assert file_hash(path) == first == "a7937b64b8caa58f03721bb6bacf5c78cb235febe0e70b1b84cd99541461a08e"
    path.write_bytes(b"second!")
    assert file_hash(path) != first


def test_a_cluster_that_cannot_be_reached_is_a_clear_error_at_once() -> None:
    began = time.monotonic()
    with pytest.raises(TargetError, match=r"cannot be reached .*leave it empty to run on this server"):
        connect("127.0.0.1:1")
    with pytest.raises(TargetError, match="is not host:port"):
        connect("nowhere")
    assert time.monotonic() - began < 5


@pytest.fixture
def listening() -> Iterator[str]:
    """host:port of a socket that accepts connections (the cluster's port, as far as reaching it goes)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield f"127.0.0.1:{server.getsockname()[1]}"


def test_a_client_without_a_token_is_refused_before_it_joins(listening: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No RAY_AUTH_MODE=token: refused, naming what to set and the setting that allows it anyway; a token file that
    cannot be read: refused by name (Ray itself would abort the process)."""
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(TargetError, match=r"RAY_AUTH_MODE is not 'token'.*WORKBENCH_CLUSTER_INSECURE=true"):
        connect(listening, insecure=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", "/nowhere/token")
    with pytest.raises(TargetError, match="token file /nowhere/token cannot be read"):
        connect(listening, insecure=False)
    assert connected() is None


class _WritesFile:
    """Unpickled, it writes its file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.path.write_text, ("unpickled",))


class _Buffer:
    """What Ray's core worker hands back for an object: its bytes, untouched."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def to_pybytes(self) -> bytes:
        return self.data


def test_only_raw_bytes_are_read_from_the_cluster_and_nothing_else_is_unpickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects of each kind as Ray's core worker would hand them over (here the metadata stands for the object):
    raw bytes are decoded into their type; a pickled object, a pickled exception and bytes that are not the answer
    are refused, and Ray's errors become Ray's own by their number; the pickle's file is never written."""
    import pickle

    import ray.exceptions
    from ray._private import worker

    from core.jobs.cluster.answers import read, read_bytes

    marker = tmp_path / "unpickled"
    objects = {
        b"RAW": wire.encode(Missing(hashes=["a" * 64])),
        b"PYTHON": pickle.dumps(_WritesFile(marker)),
        b"3": pickle.dumps(_WritesFile(marker)),  # TASK_EXECUTION_EXCEPTION: a method that raised
        b"1": b"",  # ACTOR_DIED
        b"25": b"",  # ACTOR_UNAVAILABLE
        b"RAW,": b"not msgpack",
    }

    class CoreWorker:
        def get_objects(self, refs: list[bytes], timeout_ms: int) -> list[tuple[_Buffer, bytes, None]]:
            return [(_Buffer(objects[refs[0]]), refs[0], None)]

    monkeypatch.setattr(worker.global_worker, "core_worker", CoreWorker(), raising=False)
    monkeypatch.setattr(worker.global_worker, "check_connected", lambda: None)
    assert read(b"RAW", Missing) == Missing(hashes=["a" * 64])
    with pytest.raises(TargetError, match="kind b'PYTHON' instead of bytes; it was not read"):
        read_bytes(b"PYTHON")
    with pytest.raises(JobFailed, match=r"error type 3.*its error was not read"):
        read_bytes(b"3")
    with pytest.raises(ray.exceptions.ActorDiedError):
        read_bytes(b"1")
    with pytest.raises(ray.exceptions.ActorUnavailableError):
        read_bytes(b"25")
    with pytest.raises(TargetError, match="not a Missing"):
        read(b"RAW,", Missing)
    assert not marker.exists()
    pickle.loads(objects[b"PYTHON"])  # the pickle is live: read as Ray would, it writes the file
    assert marker.exists()


def test_a_clusters_token_file_is_made_once_for_its_owner_only(tmp_path: Path) -> None:
    path = make_token_file(tmp_path / "auth_token")
    token = path.read_text()
    assert len(token) == 64 and int(token, 16) and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert make_token_file(path).read_text() == token  # kept
    path.chmod(0o644)
    with pytest.raises(TargetError, match="not a file that only its owner can read"):
        make_token_file(path)


def test_an_agent_answers_its_own_failure_as_bytes_never_as_an_exception(agent: TargetAgent) -> None:
    """A method that fails for a reason of its own (a file the cache lacks) answers JobFailed, as bytes."""
    answer = agent.submit(
        "job-x", "bench.run", wire.encode({}), (None, None), [("/caller", [("m.onnx", "0" * 64)])], []
    )
    error = wire.decode(answer, Answer).error
    assert error is not None and error[0] == "JobFailed" and "FileNotFoundError" in error[1]


def test_agents_on_one_node_keep_their_own_job_folders_and_sweep_the_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "node"))
    gone = tmp_path / "node" / "cluster-jobs" / "999999999-dead"
    (gone / "job-1").mkdir(parents=True)
    first, second = TargetAgent("node2"), TargetAgent("node2")
    assert first.jobs_root != second.jobs_root and first.jobs_root.is_dir() and second.jobs_root.is_dir()
    assert not gone.exists()


def test_target_without_a_cluster_says_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", "")
    done = cli("bench", "sample:tinycnn", "--target", "gpu-a")
    assert done.returncode == 2 and "--target gpu-a needs a Ray cluster: set cluster_address" in done.stderr
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", "127.0.0.1:1")
    done = cli("partition", "sample:tinycnn", "--target", "gpu-a")
    assert done.returncode == 2 and "The Ray cluster at 127.0.0.1:1 cannot be reached" in done.stderr


def test_targets_lists_this_server_and_warns_of_a_cluster_it_cannot_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", "127.0.0.1:1")
    done = cli("targets", "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert [t["name"] for t in listing["targets"]] == ["this server"]
    assert "cannot be reached" in listing["warning"]
    assert "CPUExecutionProvider" in listing["targets"][0]["hardware"]["providers"]


def test_runs_are_saved_and_compared_by_target(tmp_path: Path) -> None:
    """Two nodes of one host (as in the local cluster) stay two places in the History and the Dashboard."""
    store = Store(f"sqlite:///{tmp_path / 'history.sqlite'}")
    runs = []
    for target in ("head", "node2", ""):
        report = made_report(machine="vm")
        report.environment = dataclasses.replace(report.environment, target=target)
        store.save(report)
        runs.append(report)
    assert sorted(r.machine for r in store.runs()) == ["head", "node2", "vm"]
    assert store.runs(machines=["node2"])[0].machine == "node2"
    assert sorted(row.machine for row in latest_per_model_machine(runs)) == ["head", "node2", "vm"]
    loaded = store.load(store.runs(machines=["node2"])[0].id)
    assert loaded.environment.target == "node2" and loaded.environment.machine == "vm"


# -- a node's agent, without Ray: the same object the actor wraps ------------------------------------------------
@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TargetAgent:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "node"))
    return TargetAgent("node2")


def _send(agent: TargetAgent, path: Path, piece: int = 3) -> str:
    data, sha = path.read_bytes(), file_hash(path)
    for offset in range(0, max(len(data), 1), piece):
        answer = agent.put(sha, offset, data[offset : offset + piece], offset + piece >= len(data), "job-1")
        assert wire.decode(answer, Answer) == Answer()
    return sha


def _missing(agent: TargetAgent, hashes: list[str]) -> list[str]:
    return wire.decode(agent.missing(hashes), Missing).hashes


def _submitted(agent: TargetAgent, *args: Any) -> None:
    answer = wire.decode(agent.submit(*args), Answer)
    assert answer.error is None, answer.error


def test_a_file_arrives_in_pieces_once_by_its_hash_and_a_damaged_one_is_refused(
    agent: TargetAgent, tmp_path: Path
) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"0123456789abcdef")
    sha = file_hash(model)
    assert _missing(agent, [sha]) == [sha]
    _send(agent, model)
    assert _missing(agent, [sha]) == [] and (agent.cache / sha).read_bytes() == b"0123456789abcdef"
    damaged = wire.decode(agent.put("0" * 64, 0, b"not what the hash says", True, "job-2"), Answer)
    assert damaged.error is not None and damaged.error[0] == "WorkbenchError" and "arrived damaged" in damaged.error[1]
    assert _missing(agent, ["0" * 64]) == ["0" * 64] and not list(agent.cache.glob(".*"))


def _relu_bench(agent: TargetAgent, tmp_path: Path) -> tuple[list[Any], BenchRequest]:
    """A small model sent to the agent from the caller's folder: what a job reads, and bench.run's request."""
    folder = tmp_path / "caller"
    folder.mkdir()
    model = builders.write(builders.relu_model(), folder / "model.onnx")
    sha = _send(agent, model, piece=100)
    inputs = [BenchInput(name="x", dtype="float32", shape=[1, 4], batch_axis=0)]
    request = BenchRequest(model=MeasuredModel(path=str(model), inputs=inputs), time_budget_s=300.0)
    return [(str(folder), [("model.onnx", sha)])], request


def _bench_args(request: BenchRequest, **changes: Any) -> bytes:
    """bench.run's arguments as a client sends them to an agent: ``request`` with ``changes``."""
    return wire.encode({"request": dataclasses.replace(request, **changes)})


def _status(agent: TargetAgent, job_id: str) -> Status:
    """The agent's answer as the client reads it: bytes, decoded into their type."""
    answer = agent.poll(job_id)
    assert isinstance(answer, bytes)
    return wire.decode(answer, Status)


def _finished(agent: TargetAgent, job_id: str) -> Status:
    deadline = time.monotonic() + 120
    while (status := _status(agent, job_id)).result is None and status.error is None:
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def test_a_job_runs_on_the_nodes_copies_and_its_result_and_files_come_back_to_the_callers_folders(
    agent: TargetAgent, tmp_path: Path
) -> None:
    folder, out = tmp_path / "caller" / "upload-1", tmp_path / "caller" / "levels"
    folder.mkdir(parents=True)
    model = builders.write(builders.relu_model(), folder / "model.onnx")
    sha = _send(agent, model, piece=1000)
    args = wire.encode({"request": LevelsRequest(path=str(model), out_dir=str(out), levels=["basic"])})
    _submitted(agent, "job-1", OPTIMIZE.name, args, (None, None), [(str(folder), [("model.onnx", sha)])], [str(out)])
    status = _finished(agent, "job-1")
    assert status.state == "done" and status.error is None and status.result is not None
    report = wire.decode(status.result, signature_of(OPTIMIZE.target).result)
    (level,) = report.levels
    assert Path(level.path).parent == out  # the caller's folder, not the node's
    write_outputs(status.outputs, [str(out)], "optimize.levels")
    assert Path(level.path).is_file() and all(Path(f).is_file() for f in level.files)
    assert _status(agent, "job-1") == Status(state="unknown") and not list(agent.jobs_root.iterdir())  # forgotten


def test_a_jobs_error_on_a_node_keeps_its_class_and_message(agent: TargetAgent, tmp_path: Path) -> None:
    reads, request = _relu_bench(agent, tmp_path)
    bad = _bench_args(request, iterations=5, providers=["NoSuchExecutionProvider"])
    _submitted(agent, "job-2", "bench.run", bad, (60.0, None), reads, [])
    status = _finished(agent, "job-2")
    assert status.state == "failed" and status.error is not None and status.error[0] == "BenchmarkError", status
    assert "NoSuch is not in this build of ONNX Runtime" in status.error[1]


def test_a_job_whose_client_has_gone_is_cancelled_and_forgotten_at_the_next_submit(
    agent: TargetAgent, tmp_path: Path
) -> None:
    reads, request = _relu_bench(agent, tmp_path)
    _submitted(agent, "job-a", "bench.run", _bench_args(request, iterations=10**6), (None, None), reads, [])
    orphan = agent.jobs["job-a"]
    deadline = time.monotonic() + 60
    while orphan.handle.state != "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    orphan.heard -= 10_000  # its client last asked long ago
    _submitted(agent, "job-b", "bench.run", _bench_args(request, iterations=5), (None, None), reads, [])
    assert "job-a" not in agent.jobs and orphan.handle.state == "cancelled" and not orphan.folder.exists()
    assert _finished(agent, "job-b").state == "done"


def test_a_model_sent_to_a_target_from_the_command_line_travels_alone_with_its_data_file(tmp_path: Path) -> None:
    """A target receives the whole folder a model lies in: the command line gives it a folder of its own."""
    models = tmp_path / "models"
    model = builders.save_with_external_data(builders.chain_model(10), models)
    (models / "another-model.onnx").write_bytes(b"not this one")
    record = describe(f"{model},{model}.data")
    assert len(record.files) == 2  # the model and its data file
    assert in_own_folder(record, tmp_path, None) is record
    alone = in_own_folder(record, tmp_path, cast(Backend, object()))
    folder = Path(alone.path).parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(Path(f).name for f in record.files)
    assert Path(alone.path).read_bytes() == model.read_bytes() and alone.id == record.id


def test_the_callers_limits_travel_with_its_jobs_to_the_node(agent: TargetAgent, tmp_path: Path) -> None:
    """A hosted app's time limit holds on a node whose own settings allow more."""
    reads, request = _relu_bench(agent, tmp_path)
    policy = {"worker_timeout_s": 1.0, "worker_memory_mb": 3072, "require_sandbox": False}
    _submitted(agent, "job-c", "bench.run", _bench_args(request, iterations=10**6), (None, None), reads, [], policy)
    status = _finished(agent, "job-c")
    assert status.error is not None and status.error[0] == "JobTimedOut" and "limit of 1 s" in status.error[1]
    assert agent.settings.worker_timeout_s > 1.0 and agent._backend({}) is agent.backend
