"""The benchmark history (core.store) on SQLite and on a real PostgreSQL: runs saved whole and found again,
owners and teams, many writers at once, the schema made and upgraded by Alembic, and no run lost when the
database restarts, is down, or cannot be reached at all."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, func, insert, select

from core.bench import BenchReport
from core.errors import StoreError
from core.jobs.wire import from_data, to_data
from core.notes import Note, warning
from core.runtime.runs import AnyRun, BrowserRun, BrowserSide, LatencyRun, LoadtestRun, TuneRun
from core.store import Store
from core.store.kinds import settings_column
from core.store.migrate import alembic_config, current_revision, head
from core.store.schema import metadata, results, runs
from tests.postgres import PASSWORD, Postgres
from tests.reports import made_report

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty history on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'data' / 'history.sqlite'}"
    server: Postgres = request.getfixturevalue("postgres_server")
    return server.new_database()


@pytest.fixture
def server(postgres_server: Postgres) -> Iterator[Postgres]:
    """The PostgreSQL server, for a test that stops it: running again afterwards whatever happened."""
    yield postgres_server
    if not postgres_server.running():
        postgres_server.start()


def _counts(url: str) -> tuple[int, ...]:
    """Runs and results rows in the database, counted behind the store's back."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return tuple(conn.scalar(select(func.count()).select_from(table)) or 0 for table in (runs, results))
    finally:
        engine.dispose()


def _schema_drift(url: str) -> list[Any]:
    """What differs between the database's tables and the ones the code declares (empty: nothing)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert current_revision(conn) == head()
            return list(compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata))
    finally:
        engine.dispose()


# -- saving and finding -----------------------------------------------------------------------------------------
def test_a_saved_run_loads_back_whole_in_a_new_store(url: str) -> None:
    report = made_report()
    Store(url).save(report, owner="alice@acme.test", team="acme.test")
    again = Store(url)  # a new engine, as after a restart of the app
    loaded = again.load(report.id)  # samples, environment, what else the machine did: all of it, and who saved it
    assert loaded == dataclasses.replace(report, owner="alice@acme.test", team="acme.test")
    (summary,) = again.runs()
    assert (summary.id, summary.model, summary.machine, summary.configurations) == (report.id, "tinycnn", "box-a", 3)
    assert (summary.owner, summary.team, summary.inputs) == (
        "alice@acme.test",
        "acme.test",
        "input 1×3×112×112 (random normal)",
    )
    assert summary.created_at == datetime.fromisoformat(report.created_at).replace(tzinfo=None)
    assert again.summary(report.id) == summary and again.summary("nothing") is None


def test_filters_by_model_machine_date_and_owner(url: str) -> None:
    store = Store(url)
    now = datetime.now(UTC)
    old = made_report("old", model="resnet", when=now - timedelta(days=30))
    new = made_report("new", machine="gpu-box", when=now)
    store.save(old, owner="bob")
    store.save(new, owner="alice")
    assert [r.id for r in store.runs()] == ["new", "old"]  # newest first
    assert [r.id for r in store.runs(models=["resnet"])] == ["old"]
    assert [r.id for r in store.runs(machines=["gpu-box"])] == ["new"]
    assert [r.id for r in store.runs(owners=["bob"])] == ["old"]
    assert [r.id for r in store.runs(since=(now - timedelta(days=1)).replace(tzinfo=None))] == ["new"]
    assert store.runs(until=datetime(2000, 1, 1)) == [] and len(store.runs(limit=1)) == 1
    assert store.distinct("model") == ["resnet", "tinycnn"] and store.distinct("owner") == ["alice", "bob"]
    store.delete("old")
    assert [r.id for r in store.runs()] == ["new"] and _counts(url) == (1, 3)
    with pytest.raises(StoreError, match="no run 'old'"):
        store.load("old")
    with pytest.raises(StoreError, match="lists model, machine, owner, team"):
        store.distinct("cpu")


def test_a_team_sees_only_its_own_runs_and_anonymous_runs_are_the_anonymous_teams(url: str) -> None:
    store = Store(url)
    store.save(made_report("acme1", model="det"), owner="alice@acme.test", team="acme.test")
    store.save(made_report("acme2", model="seg", machine="gpu-box"), owner="carol@acme.test", team="acme.test")
    store.save(made_report("other", model="secret"), owner="eve@other.test", team="other.test")
    store.save(made_report("anon"))  # the defaults, as every caller before owners and teams
    assert {r.id for r in store.runs(team="acme.test")} == {"acme1", "acme2"}
    assert [r.id for r in store.runs(team="")] == ["anon"]
    assert {r.id for r in store.runs()} == {"acme1", "acme2", "other", "anon"}  # None: every team (the CLI)
    assert store.runs(team="acme.test", owners=["eve@other.test"]) == []
    assert store.distinct("model", team="acme.test") == ["det", "seg"]
    assert store.distinct("machine", team="acme.test") == ["box-a", "gpu-box"]
    assert store.distinct("owner", team="") == [""] and store.distinct("team") == ["", "acme.test", "other.test"]
    summary = store.summary("other")
    assert summary is not None and (summary.owner, summary.team) == ("eve@other.test", "other.test")


def _of_kind(record: type[AnyRun], run_id: str, **own: Any) -> AnyRun:
    """A run of ``record``'s kind with made_report's header, settings and results, and ``own`` fields."""
    base = made_report(run_id, when=_MEASURED)
    shared = {f.name: getattr(base, f.name) for f in dataclasses.fields(LatencyRun) if f.name != "kind"}
    return record(**{**shared, **own})


def _every_kind() -> list[AnyRun]:
    return [
        made_report("bench", when=_MEASURED),
        _of_kind(TuneRun, "tune", best={"intra_op_threads": 2}, best_label="intra 2 · ALL · fp32", not_tried=[
            warning("{stage} was not tried: the budget ran out", stage="io_binding")
        ]),
        _of_kind(LoadtestRun, "load", concurrency=[1, 4], errors={"1": 0, "4": 2}, body="npy"),
        _of_kind(BrowserRun, "web", browser=BrowserSide(backend="webgpu", threads=4), imported_at=_IMPORTED),
    ]  # fmt: skip


_MEASURED = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
_IMPORTED = "2026-12-03T09:30:00+00:00"


def test_every_kind_of_run_comes_back_as_its_own_record_with_its_own_fields(url: str) -> None:
    store = Store(url)
    for run in _every_kind():
        store.save(run, owner="ada", team="t")
    for run in _every_kind():
        assert store.load(run.id) == dataclasses.replace(run, owner="ada", team="t")
    summaries = {r.id: r for r in store.runs()}
    assert {run_id: r.kind for run_id, r in summaries.items()} == {
        "bench": "benchmark",
        "tune": "tune",
        "load": "loadtest",
        "web": "browser",
    }
    assert summaries["web"].imported_at == datetime(2026, 12, 3, 9, 30) and summaries["bench"].imported_at is None
    tune = store.load("tune")
    assert isinstance(tune, TuneRun) and "kind" not in tune.settings and tune.not_tried[0].severity == "warning"


def _settings_an_earlier_version_wrote(run: AnyRun) -> dict[str, Any]:
    """A run's settings as the version before kinds had a column wrote them: its kind's fields among them, and a
    tuning's and a load test's kind named there; its notes as English sentences."""
    settings = {**settings_column(run)}
    if isinstance(run, TuneRun | LoadtestRun):
        settings["kind"] = run.kind
    if isinstance(run, TuneRun):
        settings["not_tried"] = [n.english() for n in run.not_tried]
    return settings


def _with_sentences(run: AnyRun) -> AnyRun:
    """``run`` as read back from an earlier version's sentences: each note shown as it was written."""
    if isinstance(run, TuneRun):
        return dataclasses.replace(run, not_tried=[Note.kept(n.english()) for n in run.not_tried])
    return run


@pytest.mark.parametrize("when", ["before-the-upgrade", "after-it"])
def test_runs_an_earlier_version_told_apart_by_their_settings_come_back_as_their_kind(url: str, when: str) -> None:
    """Before revision 5 a tuning was a benchmark whose settings said ``"kind": "tune"``: upgraded, or written
    by a process of that version still running beside an upgraded one, it is still a tuning."""
    store = Store(url)
    kept = [run for run in _every_kind() if run.imported_at == ""]  # an earlier version imported nothing apart
    for run in kept:
        store.save(run)
    engine = create_engine(url)
    with engine.connect() as conn:
        if when == "before-the-upgrade":
            command.downgrade(alembic_config(conn), "0004")
        table = sa.table("runs", sa.column("id", sa.String), sa.column("settings", sa.JSON))
        for run in kept:
            changed = sa.update(table).where(table.c.id == run.id)
            conn.execute(changed.values(settings=_settings_an_earlier_version_wrote(run)))
        if when == "after-it":  # its INSERT named no kind: the column's default
            conn.execute(sa.update(runs).values(kind="benchmark"))
        conn.commit()
    engine.dispose()
    upgraded = Store(url)
    for run in kept:
        assert upgraded.load(run.id) == _with_sentences(run)
    assert {r.id: r.kind for r in upgraded.runs()} == (
        {"bench": "benchmark", "tune": "tune", "load": "loadtest"}
        if when == "before-the-upgrade"
        else {r.id: "benchmark" for r in kept}  # the column as that process left it; each read as its kind
    )
    assert _schema_drift(url) == []


def test_a_run_an_earlier_version_spooled_is_saved_as_its_kind(url: str, tmp_path: Path) -> None:
    spool = tmp_path / "history-spool"
    spool.mkdir()
    tune = _every_kind()[1]
    earlier = {"id", "model", "model_id", "created_at", "environment", "results", "baseline", "seconds", "activity"}
    earlier |= {"started", "finished"}
    report = {  # an earlier version's record: a benchmark's fields, its kind in its settings, its notes sentences
        **{name: value for name, value in to_data(tune).items() if name in earlier},
        "settings": _settings_an_earlier_version_wrote(tune),
        "headline": tune.headline.english(),
        "notes": [n.english() for n in tune.notes],
    }
    (spool / "tune.json").write_text(json.dumps({"owner": "ada", "team": "t", "report": report}))
    store = Store(url, spool=spool)
    assert store.load("tune") == dataclasses.replace(_with_sentences(tune), owner="ada", team="t")
    assert list(spool.iterdir()) == []


def _save_ten(url: str, path: str, worker: int, ready: Any) -> None:
    try:
        base = from_data(json.loads(Path(path).read_text()), BenchReport)
        ready.wait(120)  # all four at once
        store = Store(url)  # the history's first use, in four processes at the same moment: each makes the schema
        for i in range(10):
            store.save(dataclasses.replace(base, id=f"w{worker}-{i}"), owner=f"worker{worker}")
    except BaseException:
        Path(path).with_name(f"worker{worker}.txt").write_text(traceback.format_exc())
        raise


def test_four_processes_making_and_writing_a_new_history_at_once(url: str, tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(to_data(made_report())))
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Barrier(4)
    workers = [spawn.Process(target=_save_ten, args=(url, str(path), w, ready)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(180)
    why = {p.name: p.read_text() for p in sorted(tmp_path.glob("worker*.txt"))}
    assert [w.exitcode for w in workers] == [0, 0, 0, 0], why
    found = Store(url).runs(limit=1000)
    assert len(found) == 40 and all(r.configurations == 3 for r in found)
    assert {r.owner for r in found} == {f"worker{w}" for w in range(4)} and _counts(url) == (40, 120)
    assert _schema_drift(url) == []


# -- the schema -------------------------------------------------------------------------------------------------
def test_the_migrations_make_exactly_the_tables_the_code_declares(url: str) -> None:
    Store(url)
    assert _schema_drift(url) == []
    Store(url)  # a second opening finds it done
    assert _schema_drift(url) == []


def test_a_history_a_newer_version_migrated_is_refused_with_the_way_out(url: str) -> None:
    Store(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"revision 9999, which a newer version of the app made.*update the app"):
        Store(url)


def test_owners_saved_with_an_emails_case_become_one_person_when_the_history_is_upgraded(url: str) -> None:
    store = Store(url)
    owners = {"a": "Alice@ACME.test", "b": "alice@acme.test", "c": "oidc:https://idp.test#Sub@X", "d": "JDoe"}
    for run_id, owner in owners.items():
        store.save(made_report(run_id), owner=owner, team="acme")
    engine = create_engine(url)
    with engine.connect() as conn:  # the history as revision 0002 left it: owners as they came
        command.downgrade(alembic_config(conn), "0002")
        conn.commit()
    engine.dispose()
    upgraded = Store(url)
    by_run = {r.id: r.owner for r in upgraded.runs()}
    assert by_run == {"a": "alice@acme.test", "b": "alice@acme.test", "c": "oidc:https://idp.test#Sub@X", "d": "JDoe"}
    assert upgraded.distinct("owner") == ["JDoe", "alice@acme.test", "oidc:https://idp.test#Sub@X"]
    assert _schema_drift(url) == []


def test_an_owner_too_long_to_keep_is_refused_rather_than_cut(url: str) -> None:
    with pytest.raises(StoreError, match="longer than 256 characters"):
        Store(url).save(made_report(), owner="a" * 257)


def _earlier_tables(window: bool) -> sa.MetaData:
    """The tables as the app made them before migrations (the first versions: without the measurement window)."""
    old = sa.MetaData()
    text = {"model_id": 128, "cpu": 512, "baseline": 64}
    sa.Table(
        "runs",
        old,
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.DateTime, nullable=False, index=True),
        sa.Column("model", sa.String(512), nullable=False, index=True),
        sa.Column("machine", sa.String(256), nullable=False, index=True),
        *(sa.Column(name, sa.String(size), nullable=False) for name, size in text.items()),
        sa.Column("headline", sa.Text, nullable=False),
        *(sa.Column(name, sa.Float, nullable=False) for name in ("seconds", *(("started", "finished") * window))),
        *(sa.Column(name, sa.JSON, nullable=False) for name in ("settings", "environment", "notes")),
    )
    labels = {"label": 256, "engine": 32, "level": 32, "provider": 128}
    measures = ("median_ms", "p90_ms", "p99_ms", "mean_ms", "std_ms", "throughput", "speedup", "max_abs_diff")
    sa.Table(
        "results",
        old,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        *(sa.Column(name, sa.Integer, nullable=False) for name in ("position", "threads", "batch", "n")),
        *(sa.Column(name, sa.String(size), nullable=False) for name, size in labels.items()),
        *(sa.Column(name, sa.Float) for name in measures),
        sa.Column("detail", sa.JSON, nullable=False),
    )
    return old


def _write_earlier_history(url: str, report: BenchReport, window: bool) -> None:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    old, engine = _earlier_tables(window), create_engine(url)
    env = report.environment
    run = {
        "id": report.id,
        "created_at": datetime.fromisoformat(report.created_at).replace(tzinfo=None),
        **{name: getattr(report, name) for name in ("model", "model_id", "baseline", "seconds")},
        "headline": report.headline.english(),  # an earlier version kept sentences
        "machine": env.machine,
        "cpu": env.cpu,
        "settings": report.settings,
        "environment": {**to_data(env), "activity": to_data(report.activity)},
        "notes": [n.english() for n in report.notes],
    }
    if window:
        run |= {"started": report.started, "finished": report.finished}
    fields = ("label", "engine", "level", "provider", "threads", "batch", "n", "median_ms")
    rows = [
        {"run_id": report.id, "position": i, **{f: getattr(r, f) for f in fields}, "detail": to_data(r)}
        for i, r in enumerate(report.results)
    ]
    try:
        old.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(old.tables["runs"]).values(**run))
            conn.execute(insert(old.tables["results"]), rows)
    finally:
        engine.dispose()


@pytest.mark.parametrize("window", [False, True], ids=["first-version", "before-migrations"])
def test_a_history_an_earlier_version_made_is_brought_to_the_newest_schema_with_its_runs(
    url: str, window: bool
) -> None:
    report = made_report()
    _write_earlier_history(url, report, window)
    store = Store(url)
    loaded = store.load(report.id)
    assert loaded.results == report.results and loaded.activity == report.activity
    assert loaded.started == (report.started if window else 0.0)  # runs before the window was recorded: 0
    (summary,) = store.runs()
    assert (summary.id, summary.owner, summary.team, summary.configurations) == (report.id, "", "", 3)
    assert store.runs(team="") == [summary]  # earlier runs are the anonymous team's
    store.save(made_report("new"), owner="alice", team="acme")
    assert store.load("new").started > 0 and _counts(url) == (2, 6)
    assert _schema_drift(url) == []


# -- never losing a run ---------------------------------------------------------------------------------------------
def test_saves_go_on_while_the_database_restarts(server: Postgres, tmp_path: Path) -> None:
    url, spool = server.new_database(), tmp_path / "spool"
    store = Store(url, spool=spool)
    failures: list[BaseException] = []

    def restart() -> None:
        try:
            server.stop("fast")  # every connection the store holds is cut
            time.sleep(1.0)  # saves meanwhile find no server at all
            server.start()
        except BaseException as exc:
            failures.append(exc)

    restarting = threading.Thread(target=restart)
    saved: list[str] = []
    longest, after = 0.0, 0
    while after < 5 and len(saved) < 400:
        if len(saved) == 3:
            restarting.start()
        report, began = made_report(f"run{len(saved)}"), time.monotonic()
        store.save(report)
        saved.append(report.id)
        longest = max(longest, time.monotonic() - began)
        after += len(saved) > 3 and not restarting.is_alive()
    restarting.join()
    assert not failures and longest > 0.5  # a save waited for the server to come back
    assert sorted(r.id for r in store.runs(limit=1000)) == sorted(saved)
    assert _counts(url) == (len(saved), 3 * len(saved))  # none lost, none twice
    assert not spool.exists() or not list(spool.iterdir())


def test_a_run_saved_while_the_database_is_down_is_kept_and_saved_when_it_is_back(
    server: Postgres, tmp_path: Path
) -> None:
    url, spool = server.new_database(), tmp_path / "history-spool"
    store = Store(url, spool=spool, retry_s=1.0)
    report = made_report()
    server.stop("fast")
    started = time.monotonic()
    with pytest.raises(StoreError, match=f"Run {report.id} was kept in .*will be saved when the database is back"):
        store.save(report, owner="alice", team="acme")
    assert 1.0 <= time.monotonic() - started < 5  # tried again for retry_s, then kept it
    assert [p.name for p in spool.iterdir()] == [f"{report.id}.json"]
    server.start()
    again = Store(url, spool=spool)  # the next opening saves what was kept
    summary = again.summary(report.id)
    assert summary is not None and (summary.owner, summary.team) == ("alice", "acme")
    assert again.load(report.id) == dataclasses.replace(report, owner="alice", team="acme")
    assert list(spool.iterdir()) == []
    store.save(made_report("later"))  # the first store comes back too (its dead connections are replaced)
    assert _counts(url) == (2, 6)


def test_the_spool_is_saved_once_and_a_file_that_is_not_a_run_is_set_aside(url: str, tmp_path: Path) -> None:
    spool = tmp_path / "history-spool"
    store = Store(url, spool=spool)
    saved, kept = made_report("saved"), made_report("kept")
    store.save(saved)
    spool.mkdir()
    for report in (saved, kept):  # "saved" as if its save had reached the database but its answer had not
        (spool / f"{report.id}.json").write_text(json.dumps({"owner": "o", "team": "", "report": to_data(report)}))
    (spool / "junk.json").write_text("{not json")
    store.save(made_report("third"))  # a save saves what was kept first
    assert sorted(r.id for r in store.runs()) == ["kept", "saved", "third"] and _counts(url) == (3, 9)
    assert sorted(p.name for p in spool.iterdir()) == ["junk.json.unreadable"]


def test_an_unreachable_database_is_a_clear_error_without_the_password(url: str, tmp_path: Path) -> None:
    if url.startswith("sqlite"):
        blocker = tmp_path / "file"
        blocker.write_text("not a folder")
        with pytest.raises(StoreError, match="cannot be opened"):
            Store(f"sqlite:///{blocker / 'history.sqlite'}")
        return
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        Store(f"postgresql+psycopg://someone:{PASSWORD}@127.0.0.1:{port}/nowhere")
    message = str(caught.value)
    assert time.monotonic() - started < 10
    assert f"(the PostgreSQL database 'nowhere' on 127.0.0.1:{port}) cannot be reached" in message, message
    assert "history_url" in message and PASSWORD not in message
