"""Benchmark history in a real database through SQLAlchemy: a SQLite file by default, any SQLAlchemy URL
(PostgreSQL for a team) by configuration. The schema is created on first use; writers are safe together
(SQLite in WAL mode with a busy timeout; every save is one short transaction)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    insert,
    select,
)
from sqlalchemy.exc import SQLAlchemyError

from core.bench import BenchReport
from core.errors import StoreError
from core.jobs.wire import from_data, to_data
from core.runtime.activity import Activity
from core.runtime.harness import BenchResult
from core.runtime.machine import Environment

__all__ = ["RunSummary", "Store", "inputs_text"]

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("created_at", DateTime, nullable=False, index=True),
    Column("model", String(512), nullable=False, index=True),
    Column("model_id", String(128), nullable=False, default=""),
    Column("machine", String(256), nullable=False, index=True),
    Column("cpu", String(512), nullable=False, default=""),
    Column("headline", Text, nullable=False, default=""),
    Column("baseline", String(64), nullable=False, default=""),
    Column("seconds", Float, nullable=False, default=0.0),
    Column("started", Float, nullable=False, default=0.0),  # the measurement window (epoch seconds)
    Column("finished", Float, nullable=False, default=0.0),
    Column("settings", JSON, nullable=False),
    Column("environment", JSON, nullable=False),
    Column("notes", JSON, nullable=False),
)

results = Table(
    "results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("label", String(256), nullable=False),
    Column("engine", String(32), nullable=False),
    Column("level", String(32), nullable=False),
    Column("provider", String(128), nullable=False),
    Column("threads", Integer, nullable=False),
    Column("batch", Integer, nullable=False),
    Column("n", Integer, nullable=False),
    Column("median_ms", Float),
    Column("p90_ms", Float),
    Column("p99_ms", Float),
    Column("mean_ms", Float),
    Column("std_ms", Float),
    Column("throughput", Float),
    Column("speedup", Float),
    Column("max_abs_diff", Float),
    Column("detail", JSON, nullable=False),  # the whole BenchResult, samples included
)


@dataclass
class RunSummary:
    id: str
    created_at: datetime
    model: str
    machine: str
    cpu: str
    headline: str
    configurations: int
    inputs: str = ""  # what the run measured on, in a line: shapes at batch 1 and how values were made


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


def _finite(value: float | None) -> float | None:
    import math

    return value if value is not None and math.isfinite(value) else None


class Store:
    """One database; cheap to create, safe to share between threads (SQLAlchemy pools connections)."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            if url.startswith("sqlite:///"):
                Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            self.engine: Engine = create_engine(url, connect_args={"timeout": 30} if url.startswith("sqlite") else {})
            if url.startswith("sqlite"):
                event.listen(self.engine, "connect", _sqlite_pragmas)
            metadata.create_all(self.engine)
            self._upgrade()
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"The benchmark history at {_safe(url)} cannot be opened: {exc}") from exc

    def _upgrade(self) -> None:
        """Add the columns later versions introduced to a history made by an earlier one (nothing is lost)."""
        from sqlalchemy import inspect, text

        present = {c["name"] for c in inspect(self.engine).get_columns("runs")}
        with self.engine.begin() as conn:
            for column in ("started", "finished"):
                if column not in present:
                    conn.execute(text(f"ALTER TABLE runs ADD COLUMN {column} FLOAT NOT NULL DEFAULT 0"))

    def save(self, report: BenchReport) -> None:
        env = report.environment
        rows = [
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
                "median_ms": _finite(r.median_ms),
                "p90_ms": _finite(r.p90_ms),
                "p99_ms": _finite(r.p99_ms),
                "mean_ms": _finite(r.mean_ms),
                "std_ms": _finite(r.std_ms),
                "throughput": _finite(r.throughput),
                "speedup": _finite(r.speedup),
                "max_abs_diff": _finite(r.max_abs_diff),
                "detail": to_data(r),
            }
            for i, r in enumerate(report.results)
        ]
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(runs).values(
                        id=report.id,
                        created_at=datetime.fromisoformat(report.created_at).replace(tzinfo=None),
                        model=report.model[:512],
                        model_id=report.model_id,
                        machine=env.machine[:256],
                        cpu=env.cpu[:512],
                        headline=report.headline,
                        baseline=report.baseline,
                        seconds=report.seconds,
                        started=report.started,
                        finished=report.finished,
                        settings=to_data(report.settings),
                        # what else ran meanwhile travels with the machine's description
                        environment={**to_data(env), "activity": to_data(report.activity)},
                        notes=report.notes,
                    )
                )
                if rows:
                    conn.execute(insert(results), rows)
        except SQLAlchemyError as exc:
            raise StoreError(f"The run could not be saved to the history at {_safe(self.url)}: {exc}") from exc

    def runs(
        self,
        models: list[str] | None = None,
        machines: list[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 500,
    ) -> list[RunSummary]:
        from sqlalchemy import func

        counts = select(results.c.run_id, func.count().label("configurations")).group_by(results.c.run_id).subquery()
        query = select(runs, counts.c.configurations).join(counts, counts.c.run_id == runs.c.id, isouter=True)
        if models:
            query = query.where(runs.c.model.in_(models))
        if machines:
            query = query.where(runs.c.machine.in_(machines))
        if since is not None:
            query = query.where(runs.c.created_at >= since)
        if until is not None:
            query = query.where(runs.c.created_at <= until)
        query = query.order_by(runs.c.created_at.desc(), runs.c.id).limit(limit)
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(query).mappings().all()
        except SQLAlchemyError as exc:
            raise StoreError(f"The history at {_safe(self.url)} could not be read: {exc}") from exc
        return [
            RunSummary(
                r["id"],
                r["created_at"],
                r["model"],
                r["machine"],
                r["cpu"],
                r["headline"],
                r["configurations"] or 0,
                inputs_text(r["settings"] or {}),
            )
            for r in rows
        ]

    def distinct(self, column: str) -> list[str]:
        col = runs.c[column]
        with self.engine.connect() as conn:
            return [v for (v,) in conn.execute(select(col).distinct().order_by(col))]

    def load(self, run_id: str) -> BenchReport:
        try:
            with self.engine.connect() as conn:
                run = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
                rows = conn.execute(
                    select(results.c.detail).where(results.c.run_id == run_id).order_by(results.c.position)
                ).all()
        except SQLAlchemyError as exc:
            raise StoreError(f"The history at {_safe(self.url)} could not be read: {exc}") from exc
        if run is None:
            raise StoreError(f"There is no run {run_id!r} in the history.")
        environment = dict(_json(run["environment"]))
        activity = environment.pop("activity", None)
        return BenchReport(
            id=run["id"],
            model=run["model"],
            model_id=run["model_id"],
            created_at=run["created_at"].isoformat(timespec="seconds") + "+00:00",
            settings=_json(run["settings"]),
            environment=from_data(environment, Environment),
            activity=from_data(activity, Activity) if activity else None,
            results=[from_data(_json(detail), BenchResult) for (detail,) in rows],
            baseline=run["baseline"],
            headline=run["headline"],
            notes=list(_json(run["notes"])),
            seconds=run["seconds"],
            started=run["started"],
            finished=run["finished"],
        )

    def delete(self, run_id: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(results).where(results.c.run_id == run_id))
            conn.execute(delete(runs).where(runs.c.id == run_id))


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "the configured URL"


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
    cursor.execute("PRAGMA busy_timeout=30000")  # writers wait for each other instead of failing
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
