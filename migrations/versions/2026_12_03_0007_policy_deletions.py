"""Deleted policies leave a record: which versions went, when, and by which admin token.

A policy's versions are numbered on from its last deletion's, so `strict` v2 names one set of thresholds for ever: a
decision recorded under it cannot be re-read under other thresholds of the same label.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "policy_deletions",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("last_version", sa.Integer(), nullable=False),
        sa.Column("versions", sa.Integer(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_by", sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint("name", "last_version", name=op.f("pk_policy_deletions")),
    )


def downgrade() -> None:
    op.drop_table("policy_deletions")
