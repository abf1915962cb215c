"""Outcomes: what was measured after the work on a decision, predicted vs realized (the feedback loop).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outcomes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("decision_id", sa.String(length=36), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("team", sa.String(length=200), nullable=True),
        sa.Column("workload", sa.String(length=200), nullable=True),
        sa.Column("proposed_k", sa.Float(), nullable=True),
        sa.Column("realized_k", sa.Float(), nullable=True),
        sa.Column("k_ratio", sa.Float(), nullable=True),
        sa.Column("document", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["decision_id"], ["decisions.id"], name=op.f("fk_outcomes_decision_id_decisions")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outcomes")),
        sa.UniqueConstraint("decision_id", name=op.f("uq_outcomes_decision_id")),
    )
    op.create_index("ix_outcomes_team_recorded_at", "outcomes", ["team", "recorded_at"])
    op.create_index("ix_outcomes_workload_recorded_at", "outcomes", ["workload", "recorded_at"])


def downgrade() -> None:
    op.drop_index("ix_outcomes_workload_recorded_at", table_name="outcomes")
    op.drop_index("ix_outcomes_team_recorded_at", table_name="outcomes")
    op.drop_table("outcomes")
