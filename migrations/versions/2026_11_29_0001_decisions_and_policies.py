"""Decisions and policies.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=True),
        sa.Column("workload", sa.String(length=200), nullable=True),
        sa.Column("policy_name", sa.String(length=64), nullable=False),
        sa.Column("policy_version", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=True),
        sa.Column("document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decisions")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_decisions_idempotency_key")),
    )
    op.create_index("ix_decisions_created_at", "decisions", ["created_at"])
    op.create_index("ix_decisions_target_id", "decisions", ["target", "id"])
    op.create_index("ix_decisions_verdict_id", "decisions", ["verdict", "id"])
    op.create_index("ix_decisions_workload_id", "decisions", ["workload", "id"])
    op.create_table(
        "policies",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_policies")),
    )


def downgrade() -> None:
    op.drop_table("policies")
    op.drop_index("ix_decisions_workload_id", table_name="decisions")
    op.drop_index("ix_decisions_verdict_id", table_name="decisions")
    op.drop_index("ix_decisions_target_id", table_name="decisions")
    op.drop_index("ix_decisions_created_at", table_name="decisions")
    op.drop_table("decisions")
