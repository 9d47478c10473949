"""Owners who are emails are kept in lower case: ``Alice@acme.test`` and ``alice@acme.test`` are one person (the
app keys people so since this revision; runs saved earlier are brought to the same key).

The rule is the one core.identity.stored_owner applies to the library's records, written out here so that this
revision stays what it was: an owner with an ``@`` and no ``:`` (an email, never the ``oidc:<issuer>#<subject>``
key of a person without one) in lower case. Python lowers it, not the database, whose ``lower()`` may know only
ASCII (SQLite) or depend on its locale (PostgreSQL).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_runs = sa.table("runs", sa.column("owner", sa.String))


def upgrade() -> None:
    conn = op.get_bind()
    for owner in conn.execute(sa.select(_runs.c.owner).distinct()).scalars().all():
        if "@" in owner and ":" not in owner and owner != owner.lower():
            conn.execute(sa.update(_runs).where(_runs.c.owner == owner).values(owner=owner.lower()))


def downgrade() -> None:
    pass  # the case an email came in with is not kept: earlier versions find their owners in lower case
