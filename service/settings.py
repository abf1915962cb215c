"""One settings object, read from the environment inside the app factory (never at import time)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Annotated

import msgspec
from msgspec import Meta

DEFAULT_DATABASE = "sqlite:///./worthit.db"


class Settings(msgspec.Struct, kw_only=True, frozen=True):
    """Everything the service can be told. Each field is documented in the README's settings table."""

    database_url: str = DEFAULT_DATABASE
    host: str = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535)] = 8000
    policy: str = "default"
    require_auth: bool = False
    slack_signing_secret: str | None = None
    max_body_bytes: Annotated[int, Meta(ge=1024)] = 256 * 1024
    max_header_bytes: Annotated[int, Meta(ge=1024)] = 64 * 1024
    """Request line and headers together; beyond it 431 and the connection closed (service/http/protocol.py)."""
    max_profile_bytes: Annotated[int, Meta(ge=1024)] = 32 * 1024**2
    """The upload limit of `POST /v1/profiles` (the JSON API's is `max_body_bytes`)."""
    max_inflated_bytes: Annotated[int, Meta(ge=1024)] = 64 * 1024**2
    """What a gzip profile may inflate to. Parsing builds about five times the plain bytes in memory, so the default
    (twice the upload limit) keeps one parse near 400 MB, within the pod's 512 MiB."""
    rate_limit: str = "1200/minute"
    """Per token (or per address without one), per process; "off" disables it."""
    auth_failure_limit: str = "30/minute"
    """Failed authentications per client address, per process, before that address gets 429 ("off" disables)."""
    trusted_proxies: str = ""
    """Comma list of proxy addresses or CIDRs whose X-Forwarded-For names the client; none by default."""
    request_timeout_seconds: Annotated[float, Meta(gt=0)] = 30.0
    keep_alive_timeout_seconds: Annotated[int, Meta(ge=1)] = 5
    """How long a connection may stay idle after a response before the server closes it."""
    header_timeout_seconds: Annotated[float, Meta(gt=0)] = 10.0
    """How long a connection has to send a request's headers, from its opening or a further request's first byte."""
    public_url: str | None = None
    workers: Annotated[int, Meta(ge=1)] = 1
    migrate_on_start: bool = True
    database_wait_seconds: Annotated[float, Meta(ge=0)] = 0.0
    """How long a migration waits for the database to accept connections (a server still starting beside it)."""
    log_level: str = "info"

    def __post_init__(self) -> None:
        from worthit.service.http.ratelimit import parse

        for limit in (self.rate_limit, self.auth_failure_limit):
            if limit != "off":
                parse(limit)  # a malformed limit stops the start, naming what was expected
        _ = self.trusted_proxy_networks  # a malformed address stops the start too

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from `WORTHIT_*` variables (and `DATABASE_URL`), then explicit overrides (CLI options)."""
        env = os.environ if environ is None else environ
        raw: dict[str, object] = {}
        # Where each value came from, so an error names the variable or option to fix rather than `$.port`.
        origin: dict[str, str] = {}
        if "DATABASE_URL" in env:
            raw["database_url"], origin["database_url"] = env["DATABASE_URL"], "DATABASE_URL"
        for field in cls.__struct_fields__:
            name = f"WORTHIT_{field.upper()}"
            if name in env and env[name] != "":
                raw[field], origin[field] = env[name], name
        for key, value in overrides.items():
            if value is not None:
                raw[key], origin[key] = value, f"--{key.replace('_', '-')}"
        # Environment values are strings: let msgspec parse "8000" and "1"/"true" (lax), then validate.
        try:
            return msgspec.convert(raw, cls, strict=False)
        except msgspec.ValidationError as exc:
            message, _, where = str(exc).partition(" - at `$.")
            source = origin.get(where.rstrip("`").split(".")[0].split("[")[0])
            # The value itself is left out: it may be a secret (a database password, a signing secret).
            raise msgspec.ValidationError(f"{source}: {message}" if source else str(exc)) from None

    @property
    def auth_always_on(self) -> bool:
        """Tokens are required from the start and for good: asked for, or the server is reachable beyond this host."""
        return self.require_auth or not is_loopback(self.host)

    @property
    def trusted_proxy_networks(self) -> list[str]:
        """The proxies to believe X-Forwarded-For from, normalised (`10.0.0.0/8`, `127.0.0.1/32`); ValueError names
        an entry that is neither an address nor a network."""
        networks = []
        for entry in filter(None, (part.strip() for part in self.trusted_proxies.split(","))):
            try:
                networks.append(str(ipaddress.ip_network(entry, strict=False)))
            except ValueError:
                raise ValueError(
                    f"Expected `trusted_proxies` to list addresses or CIDRs (`10.0.0.0/8, 127.0.0.1`), got {entry!r}"
                ) from None
        return networks

    @property
    def async_database_url(self) -> str:
        return async_url(self.database_url)

    @property
    def is_sqlite(self) -> bool:
        return self.async_database_url.startswith("sqlite")


def is_loopback(host: str) -> bool:
    """Whether `host` (an address to bind) is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def async_url(url: str) -> str:
    """The SQLAlchemy async URL for a URL as users write it (`sqlite:///x.db`, `postgresql://…`, `postgres://…`)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        # A bare path means a SQLite file.
        return f"sqlite+aiosqlite:///{url}"
    base = scheme.split("+", 1)[0]
    if base == "sqlite":
        return f"sqlite+aiosqlite://{rest}"
    if base in ("postgresql", "postgres"):
        return f"postgresql+asyncpg://{rest}"
    return url
