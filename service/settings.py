"""One settings object, read from the environment inside the app factory (never at import time)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Annotated

import msgspec
from msgspec import Meta

from worthit.rules.names import NAME_RULE, is_name
from worthit.rules.profiles.fold import PROFILE_MAX_BYTES
from worthit.rules.profiles.kineto import MAX_STORED_OPS

__all__ = ["DEFAULT_DATABASE", "MIN_LINK_SECRET_CHARS", "Settings", "async_url", "is_loopback"]

DEFAULT_DATABASE = "sqlite:///./worthit.db"
MIN_LINK_SECRET_CHARS = 32


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
    max_summaries_bytes: Annotated[int, Meta(ge=1024)] = 8 * 1024**2
    """The body limit of `POST /v1/profiles/summaries`: a real rank's summary is 120-250 KB, so some 32 to 64 ranks;
    a larger run's summaries go to `POST /v1/profiles` as multipart files (`max_profile_bytes`)."""
    max_slack_body_bytes: Annotated[int, Meta(ge=1024)] = 32 * 1024
    """The body limit of `/slack/commands`, read before its signature is checked: a slash command is a few KB."""
    body_timeout_seconds: Annotated[float, Meta(gt=0)] = 15.0
    """How long a request's whole body may take to arrive, from the app's first read of it (408 after)."""
    slack_body_timeout_seconds: Annotated[float, Meta(gt=0)] = 3.0
    """The same for `/slack/…` routes, which read their body before checking its signature."""
    max_concurrent_uploads: Annotated[int, Meta(ge=1)] = 2
    """Bodies larger than `max_body_bytes` (or of unknown length) read at once, per process (service/http/bodies.py)."""
    max_waiting_uploads: Annotated[int, Meta(ge=0)] = 8
    """Large bodies that may wait for a slot; beyond them 503 at once."""
    max_inflated_bytes: Annotated[int, Meta(ge=1024)] = 64 * 1024**2
    """What a profile's gzip layers may inflate to, all layers of all files of one upload together."""
    max_parse_memory_bytes: Annotated[int, Meta(ge=32 * 1024**2)] = 200 * 1024**2
    """The resident memory of the worker process that parses one upload; past it the worker is killed and the upload
    answered 413. The server (~150 MB with an upload in hand) plus this stay within the pod's 512 MiB."""
    max_profile_events: Annotated[int, Meta(ge=1)] = 2_000_000
    """Events one upload's readers may hold (rows of a CSV, JSON objects of a trace), all files together; 413 above."""
    max_profile_names: Annotated[int, Meta(ge=1)] = 100_000
    """Distinct phase names (kernels, operators, API calls) one upload's readers may hold; 413 above."""
    max_stored_profile_bytes: Annotated[int, Meta(ge=64 * 1024)] = PROFILE_MAX_BYTES
    """The JSON of one stored profile's breakdown; a larger one is refused (413 naming this) before it is stored, since
    every read of the profile (a GET, a proposal naming it) loads it."""
    max_schedule_ops: Annotated[int, Meta(ge=1, le=MAX_STORED_OPS)] = 200_000
    """Device ops of one uploaded trace past which its replay schedule is not stored (the profile's notes say so):
    a what-if, or a proposal naming the profile, decodes and replays it in the server, at about 1 KB an op at peak
    (measured on the shared ResNet-50 trace), so the default keeps one within the pod's 512 MiB."""
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
    link_secret: str | None = None
    """The key of signed page links (HMAC-SHA256), the same on every replica; unset: no signed links."""
    link_ttl_days: Annotated[float, Meta(gt=0, le=366)] = 30.0
    """How long a signed page link opens its decision."""
    schema_ui: bool = False
    """Serve Litestar's browsable OpenAPI pages (/schema/redoc, /schema/swagger, …): they load third-party JavaScript
    from a CDN. Off: only the document, /schema/openapi.json."""
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
        if self.link_secret is not None and len(self.link_secret.strip()) < MIN_LINK_SECRET_CHARS:
            raise ValueError(
                f"Expected `link_secret` (WORTHIT_LINK_SECRET) of at least {MIN_LINK_SECRET_CHARS} characters, "
                f"got {len(self.link_secret.strip())}; make one with `openssl rand -hex 32`"
            )
        if not is_name(self.policy):
            raise ValueError(f"Expected `policy` to be a name of {NAME_RULE}, got {self.policy!r}")

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
