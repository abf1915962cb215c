"""The tokens table: the CLI creates and revokes tokens; the HTTP guard reads them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.rules.names import NAME_RULE, is_name
from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.errors import Conflict
from worthit.service.ids import new_id
from worthit.service.tokens.model import GRANTS, Principal, Scope, digest, new_token

__all__ = ["TokenStore", "tokens"]

tokens = Base.metadata.tables["tokens"]


@domain_errors
class TokenStore:
    """Tokens in the database (the CLI creates and revokes them; the guard reads them)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def create(self, name: str, scope: Scope) -> str:
        """Store a new token for `name` and return it; this is the only time it exists in plain text.

        ValueError when `name` is not a name (rules/names.py); Conflict when a token of that name exists, active or
        revoked (names are unique for good: a log line naming a token names one)."""
        if not is_name(name):
            raise ValueError(f"Expected a token name of {NAME_RULE}, got {name!r}")
        token = new_token()
        try:
            async with self._engine.begin() as connection:
                await connection.execute(
                    insert(tokens).values(
                        id=new_id(), name=name, token_hash=digest(token), scopes=scope, created_at=datetime.now(UTC)
                    )
                )
        except IntegrityError as exc:
            # The name's unique constraint: the hash's cannot collide (256 random bits).
            raise Conflict(f"A token named {name!r} exists (active or revoked); choose another name") from exc
        return token

    async def revoke(self, name: str) -> bool:
        async with self._engine.begin() as connection:
            result = await connection.execute(
                update(tokens)
                .where(tokens.c.name == name, tokens.c.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
        return bool(result.rowcount)

    async def list(self) -> list[dict[str, Any]]:
        query = select(tokens.c.name, tokens.c.scopes, tokens.c.created_at, tokens.c.revoked_at).order_by(
            tokens.c.created_at
        )
        async with self._engine.connect() as connection:
            return [dict(row._mapping) for row in (await connection.execute(query)).all()]

    async def find(self, token_digest: str) -> Principal | None:
        principal, _ = await self.lookup(token_digest)
        return principal

    async def lookup(self, token_digest: str) -> tuple[Principal | None, bool]:
        """The active token with this digest, and whether the digest was ever issued (a revoked token's was).

        One indexed read either way: the guard counts a failure of an issued token against that token only."""
        query = select(tokens.c.id, tokens.c.name, tokens.c.scopes, tokens.c.revoked_at).where(
            tokens.c.token_hash == token_digest
        )
        async with self._engine.connect() as connection:
            row = (await connection.execute(query)).first()
        if row is None:
            return None, False
        if row.revoked_at is not None:
            return None, True
        return Principal(id=row.id, name=row.name, scopes=GRANTS.get(row.scopes, frozenset())), True

    async def any_active(self) -> bool:
        query = select(func.count()).select_from(tokens).where(tokens.c.revoked_at.is_(None))
        async with self._engine.connect() as connection:
            return bool((await connection.execute(query)).scalar())
