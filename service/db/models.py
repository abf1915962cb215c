"""The schema, as SQLAlchemy models. Alembic owns the database; a test checks the migrations match these."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "NAMING_CONVENTION",
    "Base",
    "DecisionRow",
    "IdempotencyRow",
    "OutcomeRow",
    "PageSessionRow",
    "PolicyDeletionRow",
    "PolicyRow",
    "ProfileRow",
    "TokenRow",
]

# One naming convention from the first migration on: downgrades and batch ALTERs on SQLite need names.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class DecisionRow(Base):
    """A stored decision: the proposal, the evaluation, the policy it was made under, and where it came from.

    `document` is the decision's JSON as the API serves it; the other columns exist to filter and order.
    """

    __tablename__ = "decisions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    verdict: Mapped[str] = mapped_column(String(16))
    target: Mapped[str | None] = mapped_column(String(200))
    workload: Mapped[str | None] = mapped_column(String(200))
    policy_name: Mapped[str] = mapped_column(String(64))
    policy_version: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(16))
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_hash: Mapped[str | None] = mapped_column(String(64))
    document: Mapped[str] = mapped_column(Text)
    token_id: Mapped[str | None] = mapped_column(String(36))
    """The token that made it (None: made through Slack's signed route, with auth off, or before owners were
    recorded)."""
    slack_user: Mapped[str | None] = mapped_column(String(64))
    """The Slack user who made it from Slack: its owner, before any token (None: not made from Slack)."""
    team: Mapped[str | None] = mapped_column(String(200))
    """The proposal's `team`, to filter on."""

    __table_args__ = (
        UniqueConstraint("idempotency_key"),
        Index("ix_decisions_verdict_id", "verdict", "id"),
        Index("ix_decisions_target_id", "target", "id"),
        Index("ix_decisions_workload_id", "workload", "id"),
        Index("ix_decisions_created_at", "created_at"),
        Index("ix_decisions_team_id", "team", "id"),
    )


class PolicyRow(Base):
    """One version of a named policy, as added through the API (the bundled `default` lives in rules/)."""

    __tablename__ = "policies"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    document: Mapped[str] = mapped_column(Text)


class PolicyDeletionRow(Base):
    """A deletion of a policy's versions: up to which version, how many, when and by which token (None: auth off).

    The next version of the name is numbered after `last_version`, so a (name, version) never names two policies."""

    __tablename__ = "policy_deletions"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_version: Mapped[int] = mapped_column(Integer, primary_key=True)
    versions: Mapped[int] = mapped_column(Integer)
    deleted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deleted_by: Mapped[str | None] = mapped_column(String(100))


class TokenRow(Base):
    """A bearer token: only its SHA-256 is stored; the token itself is shown once, when created."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (UniqueConstraint("name"), UniqueConstraint("token_hash"))


class PageSessionRow(Base):
    """A sign-in of the pages: the SHA-256 of the random id its cookie holds, the token it signed in with, and when
    it ends. Only the digest is stored, so reading this table opens no page; a revoked token ends its sessions."""

    __tablename__ = "page_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_id: Mapped[str] = mapped_column(String(36), ForeignKey("tokens.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_page_sessions_expires_at", "expires_at"),)


class IdempotencyRow(Base):
    """The first answer to a write made with an `Idempotency-Key` (other than decisions, which keep theirs inline)."""

    __tablename__ = "idempotency_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    route: Mapped[str] = mapped_column(String(200), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    document: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OutcomeRow(Base):
    """What was measured after the work on a decision: predicted vs realized (one outcome per decision).

    `document` is the outcome as the API serves it; `team`, `workload` and the k figures exist for calibration.
    """

    __tablename__ = "outcomes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    decision_id: Mapped[str] = mapped_column(String(36), ForeignKey("decisions.id"))
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    team: Mapped[str | None] = mapped_column(String(200))
    workload: Mapped[str | None] = mapped_column(String(200))
    proposed_k: Mapped[float | None] = mapped_column(Float)
    realized_k: Mapped[float | None] = mapped_column(Float)
    k_ratio: Mapped[float | None] = mapped_column(Float)
    document: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("decision_id"),
        Index("ix_outcomes_team_recorded_at", "team", "recorded_at"),
        Index("ix_outcomes_workload_recorded_at", "workload", "recorded_at"),
    )


class ProfileRow(Base):
    """An uploaded profile, kept as its breakdown (the raw file is not stored)."""

    __tablename__ = "profiles"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    name: Mapped[str | None] = mapped_column(String(200))
    format: Mapped[str] = mapped_column(String(200))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    document: Mapped[str] = mapped_column(Text)


class ProfileScheduleRow(Base):
    """The replay schedule of one trace of a profile (one per rank, `position` in the files' order), encoded
    (`stored_schedule.encode_schedule`): what a what-if on the profile, and a proposal naming it, replay."""

    __tablename__ = "profile_schedules"

    profile_id: Mapped[str] = mapped_column(String(36), ForeignKey("profiles.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    ops: Mapped[int] = mapped_column(BigInteger)
    steps: Mapped[str | None] = mapped_column(String(200))
    schedule: Mapped[bytes] = mapped_column(LargeBinary)
