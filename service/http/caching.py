"""Conditional reads: an `ETag` on documents that do not change once stored, `If-None-Match` answered with 304.

Decisions and profiles are written once; a dashboard polling one, or a planning tool re-reading what it stored,
gets a 304 without the body when it sends back the tag it has. The tag is a digest of the document's JSON, so it
changes with the representation too (a field added by a later version of the service). `Cache-Control: no-cache,
private`: the documents are behind a token (no shared cache may keep them), and a client revalidates before reuse.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, TypeVar, cast

import msgspec
from litestar import MediaType, Response
from litestar.datastructures import CacheControlHeader
from litestar.params import HeaderParameter

__all__ = ["CACHE_CONTROL", "REVALIDATE", "IfNoneMatch", "entity_tag", "json_tag", "tagged", "tagged_json"]

REVALIDATE = CacheControlHeader(private=True, no_cache=True)
"""For every read: private (behind a token), revalidated before reuse. Lists have no tag: they change."""
CACHE_CONTROL = REVALIDATE.to_header()
T = TypeVar("T")

IfNoneMatch = Annotated[
    str | None,
    HeaderParameter(
        name="If-None-Match",
        description="The `ETag` of the copy the client has: 304 without a body while the document is unchanged.",
        max_length=1024,
    ),
]


def entity_tag(document: object) -> str:
    return json_tag(msgspec.json.encode(document))


def json_tag(encoded: bytes) -> str:
    """The tag of a document already encoded as JSON (the same as `entity_tag` of the document it encodes)."""
    return '"' + hashlib.sha256(encoded).hexdigest()[:32] + '"'


def _matches(header: str, tag: str) -> bool:
    # RFC 9110 §13.1.2: a list of tags, or `*`; compared weakly (a `W/` prefix does not matter).
    candidates = [candidate.strip().removeprefix("W/") for candidate in header.split(",")]
    return "*" in candidates or tag in candidates


def tagged(document: T, if_none_match: str | None) -> Response[T]:
    """`document` with its `ETag`, or an empty 304 when the request's `If-None-Match` holds that tag."""
    tag = entity_tag(document)
    headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL}
    if if_none_match is not None and _matches(if_none_match, tag):
        return cast("Response[T]", Response(content=b"", status_code=304, headers=headers))
    return Response(document, headers=headers)


def tagged_json(encoded: bytes, if_none_match: str | None) -> Response[bytes]:
    """`tagged` for a document stored as the JSON it is served as: sent as it is, never decoded and encoded again."""
    tag = json_tag(encoded)
    headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL}
    if if_none_match is not None and _matches(if_none_match, tag):
        return Response(content=b"", status_code=304, headers=headers)
    return Response(encoded, headers=headers, media_type=MediaType.JSON)
