"""The tables of the benchmark history, as the newest migration leaves them (core/store/migrations)."""

from __future__ import annotations

from sqlalchemy import JSON, Column, DateTime, Float, ForeignKey, Integer, MetaData, String, Table, Text

__all__ = ["metadata", "results", "room_results", "room_setups", "rooms", "runs"]

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
    # the run's kind (core.runtime.runs.KINDS), and when a run measured elsewhere was imported (revision 5)
    Column("kind", String(16), nullable=False, default="benchmark", server_default="benchmark", index=True),
    Column("imported_at", DateTime),
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

# The classroom (revision 4, core/classroom): a teacher's saved room settings, the rooms opened from them (each
# with its random code, until it expires or is closed), and what participants' runs pooled into a room.
room_setups = Table(
    "room_setups",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("settings", JSON, nullable=False),  # the model, the open pages, the language
    Column("updated_at", DateTime, nullable=False),
)

rooms = Table(
    "rooms",
    metadata,
    Column("code", String(16), primary_key=True),
    Column("setup", String(128), nullable=False, index=True),
    Column("settings", JSON, nullable=False),  # as the setup was when the room opened
    Column("opened_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=False, index=True),
    Column("closed_at", DateTime),
)

room_results = Table(
    "room_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("room", String(16), ForeignKey("rooms.code", ondelete="CASCADE"), nullable=False, index=True),
    Column("participant", String(32), nullable=False),  # a random id per joined session, never shown
    Column("name", String(64), nullable=False),  # the display name they typed: text, shown escaped
    Column("kind", String(16), nullable=False),  # "benchmark" or "quantize"
    Column("created_at", DateTime, nullable=False),
    Column("machine", String(256), nullable=False, default=""),
    Column("value", Float),  # a benchmark's eager→ORT speedup; a quantization's size ratio
    Column("low", Float),
    Column("high", Float),
    Column("detail", JSON, nullable=False),  # the level, threads, batch; the quantization chosen
)
