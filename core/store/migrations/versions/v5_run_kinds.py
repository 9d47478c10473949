"""A run's kind has a column of its own, and an imported run says when it was imported.

Earlier versions kept every run as a benchmark and told the others apart inside its settings: ``"kind": "tune"``
(a tuning), ``"kind": "loadtest"`` (a load test), and a browser's result by its ``"browser"`` entry. This revision
moves that into the ``kind`` column (benchmark, tune, loadtest, browser) and takes the entry out of the settings;
``imported_at`` is empty for every earlier run (nothing said which were imported). The rule is written out here so
that this revision stays what it was (core/store/kinds.py reads the same entry in runs an earlier version spooled).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_runs = sa.table("runs", sa.column("id", sa.String), sa.column("settings", sa.JSON), sa.column("kind", sa.String))
_EARLIER = {"tune": "tune", "loadtest": "loadtest"}  # the entry an earlier version wrote -> the kind


def _kind(settings: dict[str, Any]) -> str:
    if settings.get("kind") in _EARLIER:
        return _EARLIER[settings["kind"]]
    return "browser" if isinstance(settings.get("browser"), dict) else "benchmark"


def upgrade() -> None:
    op.add_column("runs", sa.Column("kind", sa.String(16), nullable=False, server_default="benchmark"))
    op.add_column("runs", sa.Column("imported_at", sa.DateTime))
    op.create_index("ix_runs_kind", "runs", ["kind"])
    conn = op.get_bind()
    text = sa.cast(_runs.c.settings, sa.Text)  # only the runs whose settings name a kind or a browser are read
    marked = sa.select(_runs.c.id, _runs.c.settings).where(text.like('%"kind"%') | text.like('%"browser"%'))
    for run_id, settings in conn.execute(marked).all():
        if not isinstance(settings, dict):
            continue
        kept = {k: v for k, v in settings.items() if k != "kind"}
        conn.execute(sa.update(_runs).where(_runs.c.id == run_id).values(kind=_kind(settings), settings=kept))


def downgrade() -> None:
    conn = op.get_bind()
    earlier = {kind: entry for entry, kind in _EARLIER.items()}
    chosen = sa.select(_runs.c.id, _runs.c.settings, _runs.c.kind).where(_runs.c.kind.in_(list(earlier)))
    for run_id, settings, kind in conn.execute(chosen).all():
        conn.execute(sa.update(_runs).where(_runs.c.id == run_id).values(settings={**settings, "kind": earlier[kind]}))
    op.drop_index("ix_runs_kind", "runs")
    op.drop_column("runs", "imported_at")
    op.drop_column("runs", "kind")
