"""Only the database's own failures become domain errors, each saying what happened: an OSError of the file system
stays what it is; a refused connection is "unavailable"."""

from __future__ import annotations

import errno
import socket

import pytest

from worthit.service.db.errors import UNAVAILABLE, connection_failed, translated
from worthit.service.errors import Unavailable


@pytest.mark.parametrize(
    "error",
    [
        PermissionError(errno.EACCES, "Permission denied", "/var/lib/worthit/worthit.db"),
        FileNotFoundError(errno.ENOENT, "No such file or directory", "/etc/worthit/policy.toml"),
        OSError(errno.EMFILE, "Too many open files"),
        OSError(errno.ENOSPC, "No space left on device"),
    ],
    ids=["permission", "missing file", "descriptors", "full disk"],
)
def test_an_oserror_that_is_no_connection_stays_what_it_is(error: OSError) -> None:
    assert not connection_failed(error)
    with pytest.raises(type(error)) as raised, translated():
        raise error
    assert raised.value is error


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 1)"),
        ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
        TimeoutError(),
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        OSError(errno.EHOSTUNREACH, "Connect call failed ('10.0.0.9', 5432)"),
        OSError(
            "Multiple exceptions: [Errno 111] Connect call failed ('::1', 5432, 0, 0), "
            "[Errno 111] Connect call failed ('127.0.0.1', 5432)"
        ),
    ],
    ids=["refused", "reset", "timeout", "name", "unreachable", "every address refused"],
)
def test_a_connection_that_fails_is_the_database_unavailable(error: OSError) -> None:
    assert connection_failed(error)
    with pytest.raises(Unavailable) as raised, translated():
        raise error
    assert str(raised.value) == UNAVAILABLE
    assert raised.value.__cause__ is error
