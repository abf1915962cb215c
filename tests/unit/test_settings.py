"""Settings come from the environment (and overrides), with database URLs accepted as users write them."""

from __future__ import annotations

import msgspec
import pytest

from worthit.service.ids import new_id
from worthit.service.settings import Settings, async_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///./worthit.db", "sqlite+aiosqlite:///./worthit.db"),
        ("sqlite:////var/lib/worthit.db", "sqlite+aiosqlite:////var/lib/worthit.db"),
        ("postgresql://u@db:5432/w", "postgresql+asyncpg://u@db:5432/w"),
        ("postgres://u@db/w", "postgresql+asyncpg://u@db/w"),
        ("postgresql+asyncpg://u@db/w", "postgresql+asyncpg://u@db/w"),
        ("data/worthit.db", "sqlite+aiosqlite:///data/worthit.db"),
    ],
)
def test_database_urls_as_users_write_them(given: str, expected: str) -> None:
    assert async_url(given) == expected


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.policy) == ("127.0.0.1", 8000, "default")
    assert settings.database_url == "sqlite:///./worthit.db"
    assert settings.require_auth is False


def test_environment_then_overrides() -> None:
    env = {"DATABASE_URL": "postgres://x/y", "WORTHIT_PORT": "9000", "WORTHIT_REQUIRE_AUTH": "1"}
    settings = Settings.from_env(env, port=9100)
    assert settings.database_url == "postgres://x/y"
    assert settings.port == 9100
    assert settings.require_auth is True


def test_worthit_database_url_wins_over_database_url() -> None:
    env = {"DATABASE_URL": "postgres://x/y", "WORTHIT_DATABASE_URL": "sqlite:///z.db"}
    assert Settings.from_env(env).database_url == "sqlite:///z.db"


def test_bad_setting_names_it() -> None:
    """The variable (or option) to fix, not the field's pointer; never the value, which may be a secret."""
    with pytest.raises(msgspec.ValidationError, match=r"^WORTHIT_PORT: Expected `int`, got `str`$"):
        Settings.from_env({"WORTHIT_PORT": "eighty"})
    with pytest.raises(msgspec.ValidationError, match=r"^--port: Expected `int` <= 65535$"):
        Settings.from_env({}, port=70000)


def test_ids_are_time_ordered_uuid7() -> None:
    first, second = new_id(), new_id()
    assert first[14] == "7"
    assert len(first) == 36
    assert first[:13] <= second[:13]
