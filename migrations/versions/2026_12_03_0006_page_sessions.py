"""Sign-in sessions of the pages: a random id in the browser's cookie, its digest here, its token and its expiry.

The cookie held the token's own digest before, which anyone could compute from a token (or read from the tokens
table) and which the server could not end before the browser did. Sessions made before this revision do not exist:
their holders sign in again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "page_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["token_id"], ["tokens.id"], name=op.f("fk_page_sessions_token_id_tokens")),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_page_sessions")),
    )
    op.create_index("ix_page_sessions_expires_at", "page_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_page_sessions_expires_at", table_name="page_sessions")
    op.drop_table("page_sessions")
