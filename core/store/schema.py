"""The tables of the benchmark history, as the newest migration leaves them (core/store/migrations)."""

from __future__ import annotations

from sqlalchemy import JSON, Column, DateTime, Float, ForeignKey, Integer, MetaData, String, Table, Text

__all__ = ["metadata", "results", "runs"]

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("created_at", DateTime, nullable=False, index=True),
    Column("model", String(512), nullable=False, index=True),
    Column("model_id", String(128), nullable=False, default=""),
    # where the run measured: the cluster target's name (core.jobs.cluster), else the host name
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
    # who saved the run and who may see it; "" is anonymous, and the anonymous team (revision 2); an owner who is
    # an email in lower case (revision 3)
    Column("owner", String(256), nullable=False, default="", server_default="", index=True),
    Column("team", String(256), nullable=False, default="", server_default="", index=True),
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
