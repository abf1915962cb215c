"""The Slack user who made a decision from Slack: only they (through Slack) or an admin token record its outcome.

Decisions made from Slack had no owner, so any write token could record their outcome and move a team's calibration.
Those made before this revision keep none (NULL) and stay as they were.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("slack_user", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("slack_user")
