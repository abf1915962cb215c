"""Which policy a request is evaluated under: the newest stored version of a name, else the bundled default."""

from __future__ import annotations

import functools
import logging
from datetime import UTC, datetime

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.names import NAME_RULE, is_name
from worthit.rules.policy import Policy, default_policy, policy_from_mapping
from worthit.service.cache import TtlCache
from worthit.service.db.policies import PolicyStore
from worthit.service.errors import Conflict, NotFound

__all__ = ["CACHE_SECONDS", "READABLE_LOOKBACK", "PolicyService"]

# Policies change rarely and are read on every evaluation: keep each for a few seconds per process. A PUT on this
# process is seen at once; other processes see it within the TTL.
CACHE_SECONDS = 5.0
READABLE_LOOKBACK = 20
"""Versions looked at, newest first, for one that reads back."""
log = logging.getLogger("worthit")


def _readable(name: str, version: int, document: str) -> Policy | None:
    try:
        return msgspec.json.decode(document, type=Policy)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        log.error("version %s of policy %r cannot be read, skipped: %s", version, name, exc)
        return None


class PolicyService:
    def __init__(self, store: PolicyStore, *, serves: str = "default", cache_seconds: float = CACHE_SECONDS) -> None:
        """`serves`: the policy this server evaluates under when a request names none (`WORTHIT_POLICY`)."""
        self._store = store
        self._serves = serves
        self._cache: TtlCache[str, Policy] = TtlCache(cache_seconds)

    async def get(self, name: str, version: int | None = None) -> Policy:
        """The policy `name` (newest version unless `version` is given); `NotFound` when there is none."""
        if not is_name(name):
            raise NotFound(f"No policy named {name!r}: names are {NAME_RULE}")
        if version is not None:
            document = await self._store.version(name, version)
            if document is None:
                if name == "default" and version == default_policy().version:
                    return default_policy()
                raise NotFound(f"No version {version} of policy `{name}`")
            policy = _readable(name, version, document)
            if policy is None:
                raise NotFound(f"Version {version} of policy `{name}` was stored damaged and cannot be read")
            return policy
        return await self._cache.get(name, functools.partial(self._load, name))

    async def _load(self, name: str) -> Policy:
        stored = await self._store.latest(name, count=READABLE_LOOKBACK)
        for version, document in stored:
            # A version stored before every key was validated may not read back: serve the newest that does.
            if (policy := _readable(name, version, document)) is not None:
                return policy
        if name == "default":
            return default_policy()
        if stored:
            raise NotFound(f"No readable version of policy `{name}`: the newest were stored damaged")
        raise NotFound(f"No policy named `{name}`; known: {', '.join(await self.names())}")

    async def all_latest(self) -> list[Policy]:
        """The newest readable version of every policy, the bundled default included."""
        latest = []
        for name in await self.names():
            try:
                latest.append(await self.get(name))
            except NotFound as exc:  # every stored version damaged: one name must not hide all the others
                log.error("policy %r left out of the list: %s", name, exc)
        return latest

    async def names(self) -> list[str]:
        """Every name a policy can be read by; a name stored before names were checked (`x\\n`) is left out, and can
        still be deleted."""
        stored = {name for name, _ in await self._store.names() if is_name(name)}
        return sorted(stored | {"default"})

    async def delete(self, name: str, deleted_by: str | None = None) -> int:
        """Delete every version of `name` (admin); how many there were. The deletion is recorded with `deleted_by`
        (the admin token's name), and later versions of the name are numbered after the deleted ones, so a decision's
        (name, version) never comes to mean other thresholds. Decisions keep the name and version they record.

        The bundled `default` and the policy this server evaluates under cannot be deleted (Conflict): every
        evaluation naming no policy would fail. Any other name may, even one stored before names were checked, so
        that it can be removed."""
        if name == "default":
            raise Conflict("The bundled policy `default` cannot be deleted; PUT a new version of it instead")
        if name == self._serves:
            raise Conflict(
                f"The policy `{name}` is the one this server evaluates under (WORTHIT_POLICY) and cannot be deleted; "
                "PUT a new version of it, or serve another policy first"
            )
        deleted = await self._store.delete(name, datetime.now(UTC), deleted_by)
        if not deleted:
            raise NotFound(f"No policy named {name!r}")
        self._cache.drop(name)
        log.warning("policy %r deleted (%d versions) by token %r", name, deleted, deleted_by)
        return deleted

    async def put(self, name: str, raw: object) -> Policy:
        """Validate and store a new version of `name` (PolicyError names a malformed key)."""
        if not is_name(name):
            raise InvalidInput(f"Expected a policy name of {NAME_RULE}, got {name!r}", "#/path/name")
        policy_from_mapping(raw, name=name, version=1)  # validate before anything is written
        floor = default_policy().version if name == "default" else 0

        def render(version: int) -> str:
            return msgspec.json.encode(policy_from_mapping(raw, name=name, version=version)).decode()

        _, document = await self._store.add(name, render, datetime.now(UTC), floor=floor)
        policy = msgspec.json.decode(document, type=Policy)
        self._cache.put(name, policy)
        return policy
