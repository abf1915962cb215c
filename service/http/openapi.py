"""The OpenAPI document as clients' generators read it: Litestar's schema, finished in this one place.

Litestar writes what it can infer from the handlers; this module adds what it cannot express, and rewrites what
generators misread (openapi-python-client was the one tried):

- `const` becomes a one-value `enum`: `k` is `number | "inf" | Range`, and a generated `oneOf` with a `const`
  branch rejected `10.0`;
- a nullable enum is one enum and `null` (Litestar writes `type: [null, string]` with `null` among the values, which
  became three identical classes), and the enums shared by many schemas (`Verdict`, `PhaseKind`, …) are components
  of their own, one type for every field that holds them;
- component names are the titles, and titles are unique (two Structs named `Phase` made a generator drop every
  schema that held either);
- every status a route can answer, with its headers: the 200 of an idempotent replay beside the 201, `Location`,
  `Retry-After` on 429 and 503, `WWW-Authenticate` on a bearer route's 401 and 403, `ETag` on the reads that have
  one. Their 304 is said in the read's description and its `If-None-Match` parameter, not as a response: a
  response without a body is `Any` to a generator, and `Any` in the union hid the one type a read answers
  (`Decision | Problem`; a 304 is `None` there, as any status the document leaves out);
- an operation id per operation, named for what it does (`getDecision`, `reevaluateDecision`: `OPERATIONS`), which
  generators turn into function names (Litestar's own made `v1_decisions_decision_id_reevaluate_reevaluate`);
- a string parameter's `format` (`date-time`) inside the string branch of its `oneOf`, where generators read it;
- the request bodies Litestar cannot see, because those handlers read the body themselves: profile upload (raw or
  multipart) and policy PUT (JSON or TOML);
- the bearer security scheme, on every operation whose route is not public (the scope the auth middleware checks).

`document(app)` is the one function: `/schema/openapi.json` serves it and `worthit openapi` writes it, so the
served document and the committed one cannot differ.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, get_args

import msgspec
from litestar import Request
from litestar.openapi.plugins import JsonRenderPlugin

from worthit.rules.model import Effect, Infinite, PhaseKind, Stage, Verdict
from worthit.service.tokens.model import PUBLIC

if TYPE_CHECKING:
    from litestar import Litestar

__all__ = [
    "BAD_REQUEST",
    "BEARER",
    "CACHE_CONTROL",
    "CHALLENGE",
    "CREATED",
    "ETAG",
    "LOCATION",
    "NOT_MODIFIED",
    "OPERATIONS",
    "PROFILE_BODY",
    "RENAMED",
    "REPLAYED",
    "RETAGGED",
    "RETRY_AFTER",
    "SECURITY_SCHEME",
    "SHARED_ENUMS",
    "TAGGED",
    "DocumentJson",
    "Schema",
    "document",
    "finish",
    "policy_body",
]

Schema = dict[str, Any]

# Components Litestar names after their module to tell them apart (`model_Phase`, `profiles_model_Phase`), with
# one title for both: each gets a name of its own, which is also its title.
RENAMED = {"model_Phase": "Phase", "profiles_model_Phase": "ProfilePhase"}

# Enums held by several schemas: one component each, so a generated client has one type for each.
SHARED_ENUMS: dict[str, tuple[str, ...]] = {
    "Verdict": get_args(Verdict),
    "Effect": get_args(Effect),
    "Stage": get_args(Stage),
    "PhaseKind": get_args(PhaseKind),
    "Infinite": get_args(Infinite),
    "RateUnit": ("ms/week", "fraction/week"),
}

BEARER = "bearer"
SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "A token from `worthit token create --scope read|write|admin` (README, Authentication). "
    "Needed once any token exists or the server listens beyond loopback; each operation says the scope it needs.",
}

LOCATION = {"description": "The stored resource's URL.", "schema": {"type": "string"}}
RETRY_AFTER = {"description": "Seconds to wait before retrying.", "schema": {"type": "integer", "minimum": 1}}
CHALLENGE = {
    "description": 'The bearer challenge (RFC 6750): `Bearer realm="worthit"`, with `error` and `scope` when known.',
    "schema": {"type": "string"},
}
ETAG = {"description": "The document's entity tag, for `If-None-Match`.", "schema": {"type": "string"}}
CACHE_CONTROL = {
    "description": "`no-cache, private`: revalidate (with `If-None-Match`) before reuse.",
    "schema": {"type": "string"},
}

# (path, method) → what Litestar cannot see: an idempotent replay's 200, headers, request bodies.
REPLAYED = {("/v1/decisions", "post"), ("/v1/decisions/{decision_id}/outcome", "post")}
CREATED = {*REPLAYED, ("/v1/profiles", "post")}
TAGGED = {("/v1/decisions/{decision_id}", "get"), ("/v1/profiles/{profile_id}", "get")}

# (path, method) → the operation's id: what a generated client's function is called. A route missing here is an
# error when the document is built, so each new route is named on purpose.
OPERATIONS = {
    ("/healthz", "get"): "healthz",
    ("/readyz", "get"): "readyz",
    ("/metrics", "get"): "metrics",
    ("/slack/commands", "post"): "slackCommand",
    ("/v1/evaluate", "post"): "evaluateProposal",
    ("/v1/decisions", "post"): "createDecision",
    ("/v1/decisions", "get"): "listDecisions",
    ("/v1/decisions/{decision_id}", "get"): "getDecision",
    ("/v1/decisions/{decision_id}/link", "get"): "getDecisionLink",
    ("/v1/decisions/{decision_id}/outcome", "get"): "getOutcome",
    ("/v1/decisions/{decision_id}/outcome", "post"): "recordOutcome",
    ("/v1/decisions/{decision_id}/reevaluate", "post"): "reevaluateDecision",
    ("/v1/calibration", "get"): "getCalibration",
    ("/v1/workloads/{name}", "get"): "getWorkloadHistory",
    ("/v1/plans", "post"): "planTarget",
    ("/v1/portfolio", "post"): "rankPortfolio",
    ("/v1/policies", "get"): "listPolicies",
    ("/v1/policies/{name}", "get"): "getPolicy",
    ("/v1/policies/{name}", "put"): "putPolicy",
    ("/v1/policies/{name}", "delete"): "deletePolicy",
    ("/v1/profiles", "get"): "listProfiles",
    ("/v1/profiles", "post"): "uploadProfile",
    ("/v1/profiles/summaries", "post"): "uploadRankSummaries",
    ("/v1/profiles/{profile_id}", "get"): "getProfile",
    ("/v1/profiles/{profile_id}/what-if", "post"): "whatIfProfile",
    ("/v1/rules", "get"): "listRules",
}
# The tag (a generated client's module) of an operation its controller does not name: re-evaluating is about a
# decision, though the policies' controller serves it.
RETAGGED = {("/v1/decisions/{decision_id}/reevaluate", "post"): "decisions"}
NOT_MODIFIED = (
    "With `If-None-Match` set to the `ETag` of the document held, answers `304 Not Modified` without a body when the "
    "document is unchanged."
)

PROFILE_BODY: Schema = {
    "description": "Profiler output: one file as the raw body, or several files of one run as multipart parts "
    "(any field name; each part's file name labels it).",
    "required": True,
    "content": {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
            }
        },
    },
}


def policy_body(components: Schema) -> Schema:
    """PUT's body: the policy's keys, each optional (the path names the policy; the store numbers its version)."""
    keys = copy.deepcopy(components["Policy"])
    keys["title"] = "PolicyKeys"
    keys["description"] = "A policy's keys; any omitted takes its default (rules/policies/default.toml)."
    keys.pop("required", None)
    for name in ("name", "version"):
        keys["properties"].pop(name, None)
    components["PolicyKeys"] = keys
    return {
        "description": "The policy's keys as JSON, or as TOML with `Content-Type: application/toml`.",
        # Required in fact (an empty body is a 400): openapi-python-client 0.29 annotates a required body of several
        # content types `| Unset` without importing `Unset` (its issue #1451), where no query parameter imports it.
        "required": False,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/PolicyKeys"}},
            "application/toml": {"schema": {"type": "string", "format": "binary"}},
        },
    }


def _walk(node: Any, visit: Any) -> Any:
    """Rebuild `node` bottom-up, passing every mapping through `visit`."""
    if isinstance(node, dict):
        return visit({key: _walk(value, visit) for key, value in node.items()})
    if isinstance(node, list):
        return [_walk(item, visit) for item in node]
    return node


def _enum_ref(values: list[Any]) -> Schema | None:
    for name, members in SHARED_ENUMS.items():
        if list(members) == values:
            return {"$ref": f"#/components/schemas/{name}"}
    return None


def _schema_fix(node: Schema) -> Schema:
    if "format" in node and isinstance(node.get("oneOf"), list):
        # `{format, oneOf: [string, null]}`: generators read a format only beside its type.
        node = {key: value for key, value in node.items() if key != "format"} | {
            "oneOf": [
                member | {"format": node["format"]} if member.get("type") == "string" else member
                for member in node["oneOf"]
            ]
        }
    if "const" in node:
        node = {key: value for key, value in node.items() if key != "const"} | {"enum": [node["const"]]}
    if "$ref" in node and (name := node["$ref"].rsplit("/", 1)[-1]) in RENAMED:
        node = node | {"$ref": f"#/components/schemas/{RENAMED[name]}"}
    values = node.get("enum")
    if not isinstance(values, list) or len(values) < 1:
        return node
    nullable = None in values or node.get("type") == ["null", "string"] or {"type": "null"} in node.get("oneOf", [])
    members = [value for value in values if value is not None]
    rest = {key: value for key, value in node.items() if key not in ("enum", "type", "oneOf")}
    enum = _enum_ref(members) or {"type": "string", "enum": members}
    return rest | (enum if not nullable else {"oneOf": [enum, {"type": "null"}]})


def _operations(app: Litestar) -> dict[tuple[str, str], str]:
    """(path, method) → the scope its route needs, for every route in the document."""
    found: dict[tuple[str, str], str] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if not getattr(handler, "include_in_schema", False):
                continue
            for method in getattr(handler, "http_methods", ()):
                found[(route.path_format or "/", method.lower())] = str(handler.opt.get("scope", "admin"))
    return found


BAD_REQUEST = {
    "description": "Bad Request",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


def _problems(responses: Schema, *, bearer: bool) -> None:
    # Litestar documents its own 400 body where a route declares none; the app answers every 400 as a Problem.
    if "400" in responses and "application/json" in responses["400"].get("content", {}):
        responses["400"] = copy.deepcopy(BAD_REQUEST)
    for status in ("429", "503"):
        if status in responses:
            responses[status]["headers"] = {"Retry-After": RETRY_AFTER}
    for status in ("401", "403") if bearer else ():
        if status in responses:
            responses[status]["headers"] = {"WWW-Authenticate": CHALLENGE}


def finish(schema: Schema, app: Litestar) -> Schema:
    """The document Litestar built (`to_schema()`), finished for generators; `schema` is not modified."""
    schema = copy.deepcopy(schema)
    components: Schema = schema.setdefault("components", {})
    schemas: Schema = components.get("schemas", {})
    for old, new in RENAMED.items():
        if old in schemas:
            schemas[new] = schemas.pop(old) | {"title": new}
    schema = _walk(schema, _schema_fix)
    components = schema["components"]
    for name, members in SHARED_ENUMS.items():
        components["schemas"][name] = {"type": "string", "enum": list(members), "title": name}
    titles = [body.get("title", key) for key, body in components["schemas"].items()]
    duplicated = sorted({title for title in titles if titles.count(title) > 1})
    if duplicated:
        raise RuntimeError(f"OpenAPI schema titles must be unique, got several {duplicated}: name them in RENAMED")

    components["securitySchemes"] = {BEARER: SECURITY_SCHEME}
    documented = [(path, method) for path, method in _operations(app) if method in schema["paths"].get(path, {})]
    unnamed = sorted(f"{method.upper()} {path}" for path, method in documented if (path, method) not in OPERATIONS)
    if unnamed:
        raise RuntimeError(
            f"Every operation needs an id in OPERATIONS (service/http/openapi.py), got none for {unnamed}"
        )
    for (path, method), scope in _operations(app).items():
        operation = schema["paths"].get(path, {}).get(method)
        if operation is None:
            continue
        operation["operationId"] = OPERATIONS[(path, method)]
        if (path, method) in RETAGGED:
            operation["tags"] = [RETAGGED[(path, method)]]
        if scope != PUBLIC:
            operation["security"] = [{BEARER: []}]
            operation["description"] = f"{operation.get('description', '')}\n\nNeeds a token with the `{scope}` scope."
        responses = operation.setdefault("responses", {})
        _problems(responses, bearer=scope != PUBLIC)
        if (path, method) in CREATED:
            responses["201"]["headers"] = {"Location": LOCATION}
        if (path, method) in REPLAYED:
            responses["200"] = copy.deepcopy(responses["201"]) | {
                "description": "An idempotent replay: the answer first given for this `Idempotency-Key` and body."
            }
        if (path, method) in TAGGED:
            responses["200"]["headers"] = {"ETag": ETAG, "Cache-Control": CACHE_CONTROL}
            operation["description"] = f"{operation.get('description', '')}\n\n{NOT_MODIFIED}"
    schema["paths"]["/v1/profiles"]["post"]["requestBody"] = PROFILE_BODY
    schema["paths"]["/v1/policies/{name}"]["put"]["requestBody"] = policy_body(components["schemas"])
    components["schemas"] = dict(sorted(components["schemas"].items()))
    return schema


def document(app: Litestar) -> Schema:
    """The app's finished OpenAPI document, built once per app."""
    cached: Schema | None = app.state.get("openapi_document")
    if cached is None:
        cached = app.state["openapi_document"] = finish(app.openapi_schema.to_schema(), app)
    return cached


class DocumentJson(JsonRenderPlugin):
    """`/schema/openapi.json`: the finished document, not Litestar's own."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return msgspec.json.encode(document(request.app))
