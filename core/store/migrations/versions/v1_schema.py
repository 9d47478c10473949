"""The history as the app made it before migrations: runs with their measurement window, and results.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_MEASURES = ("median_ms", "p90_ms", "p99_ms", "mean_ms", "std_ms", "throughput", "speedup", "max_abs_diff")


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("model", sa.String(512), nullable=False),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("machine", sa.String(256), nullable=False),
        sa.Column("cpu", sa.String(512), nullable=False),
        sa.Column("headline", sa.Text, nullable=False),
        sa.Column("baseline", sa.String(64), nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("started", sa.Float, nullable=False),
        sa.Column("finished", sa.Float, nullable=False),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("environment", sa.JSON, nullable=False),
        sa.Column("notes", sa.JSON, nullable=False),
    )
    for column in ("created_at", "model", "machine"):
        op.create_index(f"ix_runs_{column}", "runs", [column])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("label", sa.String(256), nullable=False),
        sa.Column("engine", sa.String(32), nullable=False),
        sa.Column("level", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(128), nullable=False),
        sa.Column("threads", sa.Integer, nullable=False),
        sa.Column("batch", sa.Integer, nullable=False),
        sa.Column("n", sa.Integer, nullable=False),
        *(sa.Column(name, sa.Float) for name in _MEASURES),
        sa.Column("detail", sa.JSON, nullable=False),
    )
    op.create_index("ix_results_run_id", "results", ["run_id"])


def downgrade() -> None:
    op.drop_table("results")
    op.drop_table("runs")
