"""Benchmark history in a real database through SQLAlchemy: a SQLite file by default, any SQLAlchemy URL
(PostgreSQL for a team) by configuration. The schema is made and upgraded by Alembic on first use
(core/store/migrate.py); writers are safe together (SQLite in WAL mode with a busy timeout; every save is one
short transaction). A run is never lost: a save that loses the database tries again for a while, then keeps
the run in a spool folder, from which the next store that reaches the database saves it."""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Select, delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from core.errors import StoreError
from core.identity import MAX_LENGTH, stored_owner
from core.jobs.wire import WireError, to_data
from core.notes import Note, read_notes
from core.runtime.runs import AnyRun
from core.store.engine import connection_lost, describe, open_engine, reason, safe
from core.store.kinds import read_run, settings_column
from core.store.migrate import upgrade
from core.store.notes import headline_text, read_activity, read_environment, read_headline
from core.store.schema import results, runs
from core.store.spool import Spool

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["SPOOL_FOLDER", "RunSummary", "Store", "inputs_text", "open_history"]

SPOOL_FOLDER = "history-spool"  # beside the data: runs kept while the database cannot be reached
RETRY_S = 20.0  # how long a save keeps trying a database it lost before keeping the run in the spool
_DISTINCT = ("model", "machine", "owner", "team")


@dataclass(kw_only=True)
class RunSummary:
    id: str
    created_at: datetime
    model: str
    machine: str
    cpu: str
    headline: Note
    configurations: int
    inputs: str = ""  # what the run measured on, in a line: shapes at batch 1 and how values were made
    owner: str = ""  # who saved it; "" for anonymous
    team: str = ""  # who may see it; "" is the anonymous team
    kind: str = "benchmark"  # the run's kind (core.runtime.runs.KINDS)
    imported_at: datetime | None = None  # when a run measured elsewhere was imported (UTC); None: measured here


def inputs_text(settings: dict[str, Any]) -> str:
    """The inputs a run recorded, in a line (older runs recorded only shapes)."""
    parts = []
    for name, used in (settings.get("inputs") or {}).items():
        if not isinstance(used, dict):
            continue
        shape = "×".join(str(d) for d in used.get("shape") or []) or "scalar"
        values = f" ({used['values']})" if used.get("values") else ""
        parts.append(f"{name} {shape}{values}")
    return "; ".join(parts)


def open_history(settings: Settings) -> Store:
    """The history the settings name, with its spool folder in the data folder."""
    return Store(settings.store_url, spool=Path(settings.data_dir) / SPOOL_FOLDER)


class Store:
    """One database; cheap to create, safe to share between threads (SQLAlchemy pools connections).

    ``spool``: where runs are kept while the database cannot be reached (None: a save that cannot reach it
    fails). ``retry_s``: how long a save tries again after losing the database.
    """

    def __init__(self, url: str, spool: Path | None = None, retry_s: float = RETRY_S) -> None:
        self.url = url
        self.spool = Spool(spool) if spool is not None else None
        self.retry_s = retry_s
        try:
            self.engine: Engine = open_engine(url)
            upgrade(self.engine)
        except SQLAlchemyError as exc:
            if connection_lost(exc) and not url.startswith("sqlite"):  # a server that did not answer, not a file
                raise StoreError(
                    f"The benchmark history ({describe(url)}) cannot be reached: {reason(exc, url)}. Check that "
                    "the database server is running and that history_url (WORKBENCH_HISTORY_URL) names it."
                ) from exc
            raise StoreError(f"The benchmark history at {safe(url)} cannot be opened: {reason(exc, url)}") from exc
        except OSError as exc:
            raise StoreError(f"The benchmark history at {safe(url)} cannot be opened: {exc}") from exc
        with contextlib.suppress(SQLAlchemyError):  # lost again at once: the kept runs wait for the next save
            self._flush_spool()

    # -- saving -------------------------------------------------------------------------------------------------
    def save(self, report: AnyRun, owner: str = "", team: str = "") -> None:
        """Save ``report`` as saved by ``owner`` for ``team`` (never the owner and team the record names); runs
        kept in the spool are saved first.

        A lost database is tried again with backoff for ``retry_s``; if it is still gone, the run is kept in
        the spool and a StoreError says so (without a spool, that it was not saved).
        """
        if len(owner) > MAX_LENGTH or len(team) > MAX_LENGTH:  # cut, two people would become one
            raise StoreError(f"An owner or a team longer than {MAX_LENGTH} characters cannot be saved; run not saved.")
        deadline, delay, attempt = time.monotonic() + self.retry_s, 0.1, 0
        while True:
            try:
                self._flush_spool()
                # after a lost answer the run may be in already: then it is, and once
                self._insert(report, owner, team, skip_present=attempt > 0)
                return
            except SQLAlchemyError as exc:
                if not connection_lost(exc):
                    raise StoreError(
                        f"The run could not be saved to the history at {safe(self.url)}: {reason(exc, self.url)}"
                    ) from exc
                if (left := deadline - time.monotonic()) <= 0:
                    raise self._kept(report, owner, team, exc) from exc
            time.sleep(min(delay, left))  # the last try at the deadline
            delay, attempt = min(delay * 2, 2.0), attempt + 1

    def _kept(self, report: AnyRun, owner: str, team: str, exc: SQLAlchemyError) -> StoreError:
        """The error for a run the database could not take: kept in the spool where there is one."""
        lost = f"The benchmark history ({describe(self.url)}) cannot be reached: {reason(exc, self.url)}"
        if self.spool is None:
            return StoreError(f"{lost}; run {report.id} was not saved.")
        try:
            path = self.spool.keep(report, owner, team)
        except OSError as error:
            return StoreError(f"{lost}, and run {report.id} could not be kept in {self.spool.folder}: {error}")
        return StoreError(
            f"{lost}. Run {report.id} was kept in {path} and will be saved when the database is back "
            "(by the next save, or the next time the history is opened)."
        )

    def _flush_spool(self) -> None:
        """Save the runs kept in the spool (oldest first; a run already in the history is left as it is)."""
        if self.spool is not None:
            for path in self.spool.pending():
                self._flush_one(self.spool, path)

    def _flush_one(self, spool: Spool, path: Path) -> None:
        try:
            kept = spool.read(path)
        except FileNotFoundError:
            return  # another store saved it meanwhile
        except (OSError, ValueError):
            spool.set_aside(path, "unreadable")  # kept for a person to look at, out of the way of the others
            return
        try:
            # kept by an earlier version perhaps, which kept an email's case
            self._insert(kept.report, stored_owner(kept.owner), kept.team, skip_present=True)
        except SQLAlchemyError as exc:
            if connection_lost(exc):
                raise
            if not self._present(kept.report.id):  # not another store's save of the same run: refused
                spool.set_aside(path, "refused")  # kept, and out of the way of every later save
                return
        path.unlink(missing_ok=True)

    def _present(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(runs.c.id).where(runs.c.id == run_id)).first() is not None

    def _insert(self, report: AnyRun, owner: str, team: str, skip_present: bool) -> None:
        with self.engine.begin() as conn:
            if skip_present and conn.execute(select(runs.c.id).where(runs.c.id == report.id)).first():
                return
            conn.execute(insert(runs).values(**_run_row(report, owner, team)))
            if report.results:
                conn.execute(insert(results), _result_rows(report))

    # -- reading ------------------------------------------------------------------------------------------------
    def runs(
        self,
        models: list[str] | None = None,
        machines: list[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 500,
        team: str | None = None,
        owners: list[str] | None = None,
    ) -> list[RunSummary]:
        """The runs that match, newest first. ``team``: only that team's ("" the anonymous team's); None: all."""
        query = _summaries()
        for column, chosen in ((runs.c.model, models), (runs.c.machine, machines), (runs.c.owner, owners)):
            if chosen:
                query = query.where(column.in_(chosen))
        if team is not None:
            query = query.where(runs.c.team == team)
        if since is not None:
            query = query.where(runs.c.created_at >= since)
        if until is not None:
            query = query.where(runs.c.created_at <= until)
        return self._read_summaries(query.order_by(runs.c.created_at.desc(), runs.c.id).limit(limit))

    def summary(self, run_id: str) -> RunSummary | None:
        """One run's summary; None when there is no such run."""
        found = self._read_summaries(_summaries().where(runs.c.id == run_id))
        return found[0] if found else None

    def _read_summaries(self, query: Select[Any]) -> list[RunSummary]:
        rows = self._read(lambda conn: conn.execute(query).mappings().all())
        return [
            RunSummary(
                id=r["id"],
                created_at=r["created_at"],
                model=r["model"],
                machine=r["machine"],
                cpu=r["cpu"],
                headline=read_headline(r["headline"]),
                configurations=r["configurations"] or 0,
                inputs=inputs_text(_json(r["settings"]) or {}),
                owner=r["owner"],
                team=r["team"],
                kind=r["kind"],
                imported_at=r["imported_at"],
            )
            for r in rows
        ]

    def distinct(self, column: str, team: str | None = None) -> list[str]:
        """The values ``column`` (model, machine, owner or team) takes, sorted; of one team's runs if given."""
        if column not in _DISTINCT:
            raise StoreError(f"The history cannot list {column!r}; it lists {', '.join(_DISTINCT)}.")
        col = runs.c[column]
        query = select(col).distinct().order_by(col)
        if team is not None:
            query = query.where(runs.c.team == team)
        return [v for (v,) in self._read(lambda conn: conn.execute(query).all())]

    def load(self, run_id: str) -> AnyRun:
        """The run ``run_id``, of its kind, with who saved it; a StoreError when there is none."""

        def both(conn: Connection) -> tuple[Any, Any]:
            run = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
            order = results.c.position
            return run, conn.execute(select(results.c.detail).where(results.c.run_id == run_id).order_by(order)).all()

        run, rows = self._read(both)
        if run is None:
            raise StoreError(f"There is no run {run_id!r} in the history.")
        environment = dict(_json(run["environment"]))
        activity = environment.pop("activity", None)
        fields = {
            "kind": run["kind"],
            **{name: run[name] for name in ("id", "model", "model_id", "baseline", "seconds", "started", "finished")},
            **{name: run[name] for name in ("owner", "team")},
            "created_at": _iso(run["created_at"]),
            "imported_at": _iso(run["imported_at"]) if run["imported_at"] else "",
            "settings": _json(run["settings"]),
            "environment": read_environment(environment),
            "activity": read_activity(activity) if activity else None,
            "results": [_json(detail) for (detail,) in rows],
            "headline": read_headline(run["headline"]),
            "notes": read_notes(_json(run["notes"])),
        }
        try:
            return read_run(fields)
        except WireError as exc:
            raise StoreError(f"Run {run_id} in the history cannot be read by this version of the app: {exc}") from exc

    def _read(self, work: Any) -> Any:
        try:
            with self.engine.connect() as conn:
                return work(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"The history at {safe(self.url)} could not be read: {reason(exc, self.url)}") from exc

    def delete(self, run_id: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(results).where(results.c.run_id == run_id))
                conn.execute(delete(runs).where(runs.c.id == run_id))
        except SQLAlchemyError as exc:
            raise StoreError(
                f"Run {run_id} could not be deleted from {safe(self.url)}: {reason(exc, self.url)}"
            ) from exc


def _summaries() -> Select[Any]:
    """Every run with its number of configurations."""
    counts = select(results.c.run_id, func.count().label("configurations")).group_by(results.c.run_id).subquery()
    return select(runs, counts.c.configurations).join(counts, counts.c.run_id == runs.c.id, isouter=True)


def _run_row(report: AnyRun, owner: str, team: str) -> dict[str, Any]:
    env = report.environment
    return {
        "id": report.id,
        "created_at": _naive(report.created_at),
        "model": report.model[:512],
        "model_id": report.model_id,
        "machine": env.place[:256],  # the target it ran on, else the host: where runs are compared
        "cpu": env.cpu[:512],
        "headline": headline_text(report.headline),
        "baseline": report.baseline,
        "seconds": report.seconds,
        "started": report.started,
        "finished": report.finished,
        "kind": report.kind,
        "imported_at": _naive(report.imported_at) if report.imported_at else None,
        "settings": settings_column(report),  # how it measured, and the fields of its kind's own
        # what else ran meanwhile travels with the machine's description
        "environment": {**to_data(env), "activity": to_data(report.activity)},
        "notes": to_data(report.notes),
        "owner": owner,
        "team": team,
    }


def _result_rows(report: AnyRun) -> list[dict[str, Any]]:
    measures = ("median_ms", "p90_ms", "p99_ms", "mean_ms", "std_ms", "throughput", "speedup", "max_abs_diff")
    return [
        {
            "run_id": report.id,
            "position": i,
            "label": r.label,
            "engine": r.engine,
            "level": r.level,
            "provider": r.provider,
            "threads": r.threads,
            "batch": r.batch,
            "n": r.n,
            **{name: _finite(getattr(r, name)) for name in measures},
            "detail": to_data(r),
        }
        for i, r in enumerate(report.results)
    ]


def _naive(iso: str) -> datetime:
    """An ISO 8601 time as the tables keep it: UTC, without its offset."""
    when = datetime.fromisoformat(iso)
    return (when.astimezone(UTC) if when.tzinfo else when).replace(tzinfo=None)


def _iso(when: datetime) -> str:
    """A time the tables keep (UTC, without its offset) as a run's record says it."""
    return when.isoformat(timespec="seconds") + "+00:00"


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
