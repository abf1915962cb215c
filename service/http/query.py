"""Query strings as strict as bodies: a parameter a route does not take, or one given twice, is a 400 naming it.

Litestar ignores unknown query parameters and keeps the last of repeated ones, so `?verdcit=fund` lists every
decision and `?verdict=fund&verdict=decline` silently means `decline`, while an unknown body field is refused. No
parameter of the API is a list, so none may repeat; one declared as a sequence would (Litestar collects those).

Only the JSON API (`/v1/`) is checked: the HTML pages are opened from links, which may carry what they like.
"""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl

from litestar.exceptions import ValidationException

__all__ = ["API_PREFIX", "QueryCheck", "check"]

API_PREFIX = "/v1/"


class _Accepted:
    __slots__ = ("names", "sequences")

    def __init__(self, names: frozenset[str], sequences: frozenset[str]) -> None:
        self.names = names
        self.sequences = sequences


def _accepted(app: Any) -> dict[Any, _Accepted]:
    """Per route handler: the query parameters it takes (from Litestar's own parameter model of the route)."""
    table: dict[Any, _Accepted] = {}
    for route in app.routes:
        for handler, kwargs_model in getattr(route, "route_handler_map", {}).values():
            expected = kwargs_model.expected_query_params
            table[handler] = _Accepted(
                frozenset(parameter.field_alias for parameter in expected),
                frozenset(kwargs_model.sequence_query_parameter_names),
            )
    return table


class QueryCheck:
    """Per route, after routing (and after auth): 400 for unknown or repeated query parameters of `/v1/` routes."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # OPTIONS answers which methods a path allows, whatever the query (a CORS preflight repeats the request's).
        if (
            scope["type"] == "http"
            and scope["query_string"]
            and scope["path"].startswith(API_PREFIX)
            and scope["method"] != "OPTIONS"
        ):
            check(scope)
        await self.app(scope, receive, send)


def check(scope: Any) -> None:
    state = scope["litestar_app"].state
    table: dict[Any, _Accepted] | None = state.get("query_parameters")
    if table is None:
        table = state["query_parameters"] = _accepted(scope["litestar_app"])
    accepted = table.get(scope["route_handler"])
    if accepted is None:  # pragma: no cover - every routed handler is in the table
        return
    counts = Counter(name for name, _ in parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
    errors = []
    for name, count in counts.items():
        if name not in accepted.names:
            expected = ", ".join(f"`{known}`" for known in sorted(accepted.names)) or "none"
            close = difflib.get_close_matches(name, accepted.names, n=1, cutoff=0.6)
            hint = f"did you mean `{close[0]}`? " if close else ""
            errors.append(
                {"key": name, "source": "query", "message": f"unknown parameter; {hint}this route takes {expected}"}
            )
        elif count > 1 and name not in accepted.sequences:
            errors.append({"key": name, "source": "query", "message": f"expected one value, got {count}"})
    if errors:
        raise ValidationException(extra=errors)
