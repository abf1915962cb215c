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

from worthit.rules.errors import InvalidInput, PolicyError
from worthit.rules.profiles.errors import ProfileError, ProfileTooLarge
from worthit.service.errors import Conflict, Forbidden, NotFound, Unavailable, Unreadable, Unstorable
from worthit.service.validation import validation_problem

__all__ = [
    "BODY_PROBLEMS",
    "COMMON_PROBLEMS",
    "EXCEPTION_HANDLERS",
    "KINDS",
    "PROBLEM_BASE",
    "PROBLEM_JSON",
    "TITLES",
    "Problem",
    "ProblemError",
    "body_limit",
    "parameter_name",
    "problem_response",
    "problem_responses",
    "problem_type",
]

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("worthit.errors")


class ProblemError(msgspec.Struct, kw_only=True):
    detail: str
    pointer: str


class Problem(msgspec.Struct, kw_only=True):
    """RFC 9457 problem details."""

    type: str
    """A URI naming the kind of problem (`https://worthit.dev/problems/validation`, …), one per status at least."""
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


# The problem type of each status when the error has no more particular one (`validation`, `policy`, …): every
# problem has a type a client can branch on, none is `about:blank`.
KINDS = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "too-large",
    415: "unsupported-media-type",
    422: "validation",
    429: "too-many-requests",
    500: "internal",
    503: "unavailable",
}
PROBLEM_BASE = "https://worthit.dev/problems/"


def problem_type(status: int, kind: str | None = None) -> str:
    return PROBLEM_BASE + (kind or KINDS.get(status, "error"))


def problem_response(
    status: int,
    detail: str,
    errors: list[ProblemError] | None = None,
    headers: dict[str, str] | None = None,
    kind: str | None = None,
) -> Response[Problem]:
    problem = Problem(
        type=problem_type(status, kind),
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


def parameter_name(request: Request[Any, Any, Any], key: str, source: str) -> str:
    """The name a parameter is sent under (`Idempotency-Key`), not the handler argument's (`idempotency_key`)."""
    parsed = getattr(request.route_handler, "parsed_fn_signature", None)
    parameter = parsed.parameters.get(key) if parsed is not None else None
    definition = getattr(parameter, "kwarg_definition", None)
    # `HeaderParameter(name=…)` or `Parameter(header=…)` (`query=`, `cookie=`): the name on the wire.
    for sent in (getattr(definition, source, None) if source else None, getattr(definition, "name", None)):
        if isinstance(sent, str) and sent:
            return sent
    return key


def _litestar_validation_handler(request: Request[Any, Any, Any], exc: ValidationException) -> Response[Problem]:
    errors: list[ProblemError] = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        source = str(getattr(item.get("source"), "value", item.get("source") or ""))
        key = parameter_name(request, str(item.get("key", "")), source)
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


def body_limit(request: Request[Any, Any, Any]) -> str:
    """A 413's detail: the route's limit in bytes and the setting that sets it."""
    limit = request.route_handler.resolve_request_max_body_size()
    settings = request.app.state.get("settings")
    setting = "WORTHIT_MAX_BODY_BYTES"
    if settings is not None and limit != settings.max_body_bytes:
        # The routes with a limit of their own: profile uploads, and Slack's, read before their signature.
        if request.url.path.startswith("/slack/") and limit == settings.max_slack_body_bytes:
            setting = "WORTHIT_MAX_SLACK_BODY_BYTES"
        elif request.url.path.rstrip("/") == "/v1/profiles/summaries" and limit == settings.max_summaries_bytes:
            setting = "WORTHIT_MAX_SUMMARIES_BYTES"
        elif limit == settings.max_profile_bytes:
            setting = "WORTHIT_MAX_PROFILE_BYTES"
    return f"Expected a request body of at most {limit} bytes ({setting}), got more"


def _http_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Problem]:
    headers = dict(exc.headers or {})
    detail = str(exc.detail)
    if exc.status_code == 413:
        detail = body_limit(request)
    return problem_response(exc.status_code, detail, headers=headers or None)


def _internal_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(HTTP_500_INTERNAL_SERVER_ERROR, "An internal error occurred; it has been logged.")


def _unreadable(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return problem_response(HTTP_500_INTERNAL_SERVER_ERROR, str(exc), kind="internal")


def _profile_handler(_: Request[Any, Any, Any], exc: ProfileError) -> Response[Problem]:
    if isinstance(exc, ProfileTooLarge):
        return problem_response(413, str(exc), [ProblemError(detail=str(exc), pointer="")], kind="too-large")
    return problem_response(422, str(exc), [ProblemError(detail=str(exc), pointer="")], kind="profile")


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    ProfileError: _profile_handler,
    msgspec.ValidationError: _validation_handler,
    msgspec.DecodeError: _decode_handler,
    ValidationException: _litestar_validation_handler,
    InvalidInput: _invalid_input_handler,
    PolicyError: _policy_handler,
    Conflict: _simple(409, "conflict"),
    Forbidden: _simple(403, "forbidden"),
    NotFound: _simple(404, "not-found"),
    Unavailable: _unavailable,
    Unstorable: _simple(422, "validation"),
    Unreadable: _unreadable,
    HTTPException: _http_handler,
    Exception: _internal_handler,
}
