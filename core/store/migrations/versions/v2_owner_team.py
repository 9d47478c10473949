"""Runs carry who saved them and the team that may see them ("" for both: anonymous, as every earlier run).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for column in ("owner", "team"):
        op.add_column("runs", sa.Column(column, sa.String(256), nullable=False, server_default=""))
        op.create_index(f"ix_runs_{column}", "runs", [column])


def downgrade() -> None:
    for column in ("owner", "team"):
        op.drop_index(f"ix_runs_{column}", "runs")
        op.drop_column("runs", column)
