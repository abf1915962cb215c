"""The replay schedule of each trace of an uploaded profile, beside its breakdown: a what-if on a stored profile and
a proposal naming one replay it without the trace.

Profiles stored before this revision have none: they keep Amdahl's arithmetic, and a what-if on them is refused.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "profile_schedules",
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("ops", sa.BigInteger(), nullable=False),
        sa.Column("steps", sa.String(length=200), nullable=True),
        sa.Column("schedule", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["profile_id"], ["profiles.id"], name=op.f("fk_profile_schedules_profile_id_profiles")),
        sa.PrimaryKeyConstraint("profile_id", "position", name=op.f("pk_profile_schedules")),
    )


def downgrade() -> None:
    op.drop_table("profile_schedules")
