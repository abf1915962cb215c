"""The team a decision is for, as a column: `GET /v1/decisions?team=…` filters on it, newest first.

Decisions stored before this revision carry their team only inside their document; the upgrade copies it out, a
batch of rows at a time (the documents are read in id order, never all at once).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("team", sa.String(length=200), nullable=True))
    op.create_index("ix_decisions_team_id", "decisions", ["team", "id"])
    decisions = sa.table("decisions", sa.column("id", sa.String), sa.column("team", sa.String), sa.column("document"))
    connection = op.get_bind()
    last = ""
    while True:
        rows = connection.execute(
            sa.select(decisions.c.id, decisions.c.document)
            .where(decisions.c.id > last)
            .order_by(decisions.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        for row in rows:
            team = (json.loads(row.document).get("proposal") or {}).get("team")
            if isinstance(team, str):
                connection.execute(sa.update(decisions).where(decisions.c.id == row.id).values(team=team[:200]))
        last = rows[-1].id


def downgrade() -> None:
    op.drop_index("ix_decisions_team_id", table_name="decisions")
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("team")
