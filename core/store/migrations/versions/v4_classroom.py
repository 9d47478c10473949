"""The classroom: saved room settings, rooms with their codes and expiry, and the results pooled into each room.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "room_setups",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "rooms",
        sa.Column("code", sa.String(16), primary_key=True),
        sa.Column("setup", sa.String(128), nullable=False),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("opened_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
        sa.Column("closed_at", sa.DateTime),
    )
    op.create_index("ix_rooms_setup", "rooms", ["setup"])
    op.create_index("ix_rooms_expires_at", "rooms", ["expires_at"])
    op.create_table(
        "room_results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("room", sa.String(16), sa.ForeignKey("rooms.code", ondelete="CASCADE"), nullable=False),
        sa.Column("participant", sa.String(32), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("machine", sa.String(256), nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("low", sa.Float),
        sa.Column("high", sa.Float),
        sa.Column("detail", sa.JSON, nullable=False),
    )
    op.create_index("ix_room_results_room", "room_results", ["room"])


def downgrade() -> None:
    op.drop_table("room_results")
    op.drop_table("rooms")
    op.drop_table("room_setups")
