"""The database's failures as domain errors (service/errors.py), so nothing above service/db/ knows SQLAlchemy.

Every public coroutine of a store runs inside `translated()`: what the driver raises becomes
- `Unavailable` for a database that cannot be reached (connection refused, a host name that does not resolve,
  timeouts, a pool that cannot hand out a connection) — the only case the client is told "the database is
  unavailable";
- `Unavailable` saying the connection dropped, for one lost in the middle of the operation (a server restarted, an
  administrator ended the session): the operation may or may not have been applied, so it is retried with the same
  Idempotency-Key;
- `Conflict` for a write that collided with another stored at the same time (an integrity error);
- `Unstorable` for a value the boundary let through but the database cannot hold (a data error): the client's
  input, a 422;
- `Unavailable` with its own message for any other error the database answers with (a read-only transaction, a
  full disk): the request was sound, the database cannot take it now.
Errors that are not the database's (an OSError of the file system, a bug) are not touched: they stay what they are;
`connection_failed` says which OSErrors are the database's.
"""

from __future__ import annotations

import errno
import functools
import inspect
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    DisconnectionError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from worthit.service.errors import Conflict, Unavailable, Unstorable

log = logging.getLogger("worthit.db")

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound=type)

UNAVAILABLE = "The database is unavailable; retry shortly (with the same Idempotency-Key for writes)."
DROPPED = (
    "The connection to the database dropped during the operation; retry it (with the same Idempotency-Key for writes)."
)
REFUSED = (
    "The database refused the operation (it takes no writes now: read-only, or out of space); retry shortly (with the "
    "same Idempotency-Key for writes)."
)


@contextmanager
def translated() -> Iterator[None]:
    """Raise the domain error for what the database raised inside the block (see the module doc)."""
    try:
        yield
    except IntegrityError as exc:
        # The driver's text carries the SQL statement and its parameters: for the log, never for the client.
        log.warning("write conflicted with a stored row: %s", exc)
        raise Conflict("The write conflicts with one stored at the same time; retry it.") from exc
    except DataError as exc:
        log.warning("database rejected a value: %s", exc)
        raise Unstorable("A value is out of the range the database can store.") from exc
    except (OperationalError, InterfaceError, DisconnectionError, PoolTimeout) as exc:
        log.warning("database unavailable: %s", type(exc).__name__)
        raise Unavailable(DROPPED if _dropped(exc) else UNAVAILABLE) from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:  # the driver's error on a connection that was lost (asyncpg's are various)
            log.warning("database connection dropped: %s", type(exc).__name__)
            raise Unavailable(DROPPED) from exc
        # The database answered but refused the operation for its own state: a read-only transaction or database,
        # a full disk, a serialization failure. The request was sound; another replica or a retry may take it.
        log.warning("database refused the operation: %s", exc)
        raise Unavailable(REFUSED) from exc
    except OSError as exc:  # the driver's socket, before SQLAlchemy could wrap it
        if not connection_failed(exc):
            raise
        log.warning("database unavailable: %s", type(exc).__name__)
        raise Unavailable(UNAVAILABLE) from exc


def _dropped(exc: DBAPIError | DisconnectionError | PoolTimeout) -> bool:
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


# Network errors with no subclass of their own: OSError(EHOSTUNREACH, ...) stays a plain OSError.
_UNREACHABLE = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN, errno.EADDRNOTAVAIL})


def connection_failed(exc: BaseException) -> bool:
    """Whether an OSError says a connection to the database could not be made or was lost, rather than a file or
    another resource failing: refused, reset, timed out, a host that does not resolve or cannot be reached."""
    if isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
        return True
    if not isinstance(exc, OSError):
        return False
    # asyncio, trying every address a host name resolves to, joins their failures in one plain OSError.
    return exc.errno in _UNREACHABLE or (exc.errno is None and str(exc).startswith("Multiple exceptions: "))


def _wrapped(method: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        with translated():
            return await method(*args, **kwargs)

    return call


def domain_errors(cls: C) -> C:
    """A store whose public coroutines raise domain errors only (applied to every class in service/db/)."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(member):
            setattr(cls, name, _wrapped(member))
    return cls


__all__ = ["DROPPED", "REFUSED", "UNAVAILABLE", "connection_failed", "domain_errors", "translated"]
