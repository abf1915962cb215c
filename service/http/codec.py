"""Strict request bodies: JSON only, decoded by msgspec in strict mode against the handler's Struct.

Litestar converts bodies leniently (`{"p": "0.5"}` would pass for a float); a planning tool sending a string is a
bug we should report, not paper over. The DTO keeps the Struct's own OpenAPI schema.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec
from litestar.dto import MsgspecDTO
from litestar.exceptions import ClientException
from litestar.typing import FieldDefinition

from worthit.service.validation import decode_strict

__all__ = ["StrictJSON", "StrictJSONArray", "is_json"]


def is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


T = TypeVar("T", bound=msgspec.Struct)


class StrictJSON(MsgspecDTO[T], Generic[T]):
    """A request-body DTO that decodes strictly and documents the Struct as it is."""

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        # Litestar would build a transfer backend per handler here, generating and compiling code for the Struct's
        # whole tree: a fifth of a second of every worker's start, for a backend this DTO never calls (it decodes JSON
        # and documents the Struct itself, below; its handlers return no DTO and take no form bodies).
        return

    @classmethod
    def create_openapi_schema(cls, field_definition: FieldDefinition, handler_id: str, schema_creator: Any) -> Any:
        return schema_creator.for_field_definition(FieldDefinition.from_annotation(cls.model_type))

    def decode_bytes(self, value: bytes) -> Any:
        content_type = self.asgi_connection.headers.get("content-type", "")
        if not is_json(content_type):
            raise ClientException(
                status_code=415,
                detail=f"Expected `Content-Type: application/json`, got {content_type or 'none'!r}",
            )
        return decode_strict(value, self.model_type)


class StrictJSONArray(StrictJSON[T], Generic[T]):
    """`StrictJSON` for a body that is a JSON array of the Struct (`data: JSONBody[list[Struct]]`): decoded and
    converted once, strictly, so nesting deeper than msgspec goes is a 400 naming the body, never Litestar's own
    decoding's RecursionError (a 500)."""

    @classmethod
    def create_openapi_schema(cls, field_definition: FieldDefinition, handler_id: str, schema_creator: Any) -> Any:
        return schema_creator.for_field_definition(FieldDefinition.from_annotation(list[cls.model_type]))  # type: ignore[name-defined]

    def decode_bytes(self, value: bytes) -> Any:
        content_type = self.asgi_connection.headers.get("content-type", "")
        if not is_json(content_type):
            raise ClientException(
                status_code=415,
                detail=f"Expected `Content-Type: application/json`, got {content_type or 'none'!r}",
            )
        return decode_strict(value, list[self.model_type])  # type: ignore[name-defined]
