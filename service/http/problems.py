"""Every error as RFC 9457 problem details, from one table. Domain errors (rules/errors.py) know no HTTP.

A problem names the offending field: `detail` says what was expected, what was got and where, and `errors` lists
`{detail, pointer}` pairs with JSON pointers (RFC 6901) into the request body (or `#/query/<name>` for queries).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from sqlalchemy.exc import DataError, DBAPIError, DisconnectionError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError

from worthit.rules.errors import InvalidInput, PolicyError
from worthit.rules.profiles.errors import ProfileError, ProfileTooLarge
from worthit.service.errors import Conflict, Forbidden, NotFound, Unavailable
from worthit.service.validation import validation_problem

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("worthit.errors")


class ProblemError(msgspec.Struct, kw_only=True):
    detail: str
    pointer: str


class Problem(msgspec.Struct, kw_only=True):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[ProblemError] = msgspec.field(default_factory=list)


TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def problem_response(
    status: int,
    detail: str,
    errors: list[ProblemError] | None = None,
    headers: dict[str, str] | None = None,
    kind: str | None = None,
) -> Response[Problem]:
    problem = Problem(
        type=f"https://worthit.dev/problems/{kind}" if kind else "about:blank",
        title=TITLES.get(status, "Error"),
        status=status,
        detail=detail,
        errors=errors or [],
    )
    return Response(problem, status_code=status, media_type=PROBLEM_JSON, headers=headers)


COMMON_PROBLEMS = (400, 401, 403, 429, 503)
BODY_PROBLEMS = (413, 415, 422)


def problem_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the problems a route can answer, besides those every route can (COMMON_PROBLEMS)."""
    return {
        code: ResponseSpec(
            data_container=Problem, description=TITLES[code], media_type=PROBLEM_JSON, generate_examples=False
        )
        for code in sorted({*COMMON_PROBLEMS, *codes})
    }


def _validation_handler(_: Request[Any, Any, Any], exc: msgspec.ValidationError) -> Response[Problem]:
    detail, pointer = validation_problem(str(exc))
    return problem_response(422, detail, [ProblemError(detail=detail, pointer=pointer)], kind="validation")


def _decode_handler(_: Request[Any, Any, Any], exc: msgspec.DecodeError) -> Response[Problem]:
    detail = f"Expected a JSON document, got malformed input: {exc}"
    return problem_response(400, detail, [ProblemError(detail=detail, pointer="")], kind="malformed")


def _litestar_validation_handler(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Problem]:
    errors: list[ProblemError] = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        key = str(item.get("key", ""))
        source = str(getattr(item.get("source"), "value", item.get("source") or ""))
        if key == "data" and source == "body":
            errors.append(
                ProblemError(detail="Expected a JSON object in the request body, got an empty body", pointer="")
            )
        else:
            message = str(item.get("message", "invalid value"))
            errors.append(
                ProblemError(
                    detail=f"Invalid {source or 'parameter'} `{key}`: {message}", pointer=f"#/{source or 'query'}/{key}"
                )
            )
    detail = "; ".join(error.detail for error in errors) or str(exc.detail)
    return problem_response(400, detail, errors, kind="bad-request")


def _invalid_input_handler(_: Request[Any, Any, Any], exc: InvalidInput) -> Response[Problem]:
    return problem_response(422, exc.detail, [ProblemError(detail=exc.detail, pointer=exc.pointer)], kind="validation")


def _policy_handler(_: Request[Any, Any, Any], exc: PolicyError) -> Response[Problem]:
    detail, pointer = validation_problem(exc.detail)
    if exc.key and not pointer:
        pointer = "/" + exc.key.replace(".", "/")
    if "unknown field" in exc.detail:
        detail = f"Unknown policy key `{exc.key}`; expected only the keys documented in rules/policies/default.toml"
    return problem_response(422, detail, [ProblemError(detail=detail, pointer=pointer)], kind="policy")


def _simple(status: int, kind: str) -> Any:
    def handler(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
        return problem_response(status, str(exc), kind=kind)

    return handler


def _unavailable(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    return problem_response(503, str(exc), headers={"Retry-After": "1"}, kind="unavailable")


def _http_handler(_: Request[Any, Any, Any], exc: HTTPException) -> Response[Problem]:
    headers = dict(exc.headers or {})
    return problem_response(exc.status_code, str(exc.detail), headers=headers or None)


def _internal_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(HTTP_500_INTERNAL_SERVER_ERROR, "An internal error occurred; it has been logged.")


def _integrity_handler(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    # The driver's text carries the SQL statement and its parameters: for the log, never for the client.
    log.warning("write conflicted with a stored row: %s", exc)
    return problem_response(409, "The write conflicts with one stored at the same time; retry it.", kind="conflict")


def _data_handler(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    # A value the boundary let through but the database cannot hold: still the client's input, never a 5xx.
    log.warning("database rejected a value: %s", exc)
    return problem_response(422, "A value is out of the range the database can store.", kind="validation")


def _database_handler(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    log.warning("database unavailable: %s", type(exc).__name__)
    return problem_response(
        503,
        "The database is unavailable; retry shortly (with the same Idempotency-Key for writes).",
        headers={"Retry-After": "1"},
        kind="unavailable",
    )


def _profile_handler(_: Request[Any, Any, Any], exc: ProfileError) -> Response[Problem]:
    if isinstance(exc, ProfileTooLarge):
        return problem_response(413, str(exc), [ProblemError(detail=str(exc), pointer="")], kind="too-large")
    return problem_response(422, str(exc), [ProblemError(detail=str(exc), pointer="")], kind="profile")


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    ProfileError: _profile_handler,
    IntegrityError: _integrity_handler,
    DataError: _data_handler,
    DBAPIError: _database_handler,
    OperationalError: _database_handler,
    InterfaceError: _database_handler,
    DisconnectionError: _database_handler,
    SQLAlchemyTimeoutError: _database_handler,
    ConnectionError: _database_handler,
    OSError: _database_handler,
    msgspec.ValidationError: _validation_handler,
    msgspec.DecodeError: _decode_handler,
    ValidationException: _litestar_validation_handler,
    InvalidInput: _invalid_input_handler,
    PolicyError: _policy_handler,
    Conflict: _simple(409, "conflict"),
    Forbidden: _simple(403, "forbidden"),
    NotFound: _simple(404, "not-found"),
    Unavailable: _unavailable,
    HTTPException: _http_handler,
    Exception: _internal_handler,
}
