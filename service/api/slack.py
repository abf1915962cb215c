"""`POST /slack/commands`: the `/worthit` slash command, verified with Slack's signing secret, answered in Block Kit.

The signature is checked on the raw body before anything is parsed, with Slack's own verifier (`slack_sdk`: HMAC
over `v0:{timestamp}:{body}`, constant-time compare, a 5-minute replay window). With no secret configured the
endpoint is off (404), never open. A replay of a signed request inside that window answers what the first one did
and stores nothing: the signature is its idempotency key. Whatever the text says, a signed request gets 200 and a
message: a typo answers with the usage naming the token, because Slack shows anything else as an opaque failure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qs

from litestar import Request, Response, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import NotAuthorizedException
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import HeaderParameter
from slack_sdk.signature import SignatureVerifier

from worthit.rules.errors import InvalidInput
from worthit.service.decisions.service import DecisionService, request_hash
from worthit.service.errors import NotFound
from worthit.service.http.page_access import signed_path
from worthit.service.http.problems import PROBLEM_JSON, Problem
from worthit.service.settings import Settings
from worthit.service.slack.blocks import SlackMessage, decision_message, invalid_message, usage_message
from worthit.service.slack.text import Command, Help, parse

__all__ = ["FORM", "SOURCE_FIELDS", "SlashCommandOperation", "replay_key", "signed", "slack_command"]

FORM = "application/x-www-form-urlencoded"
SOURCE_FIELDS = ("user_id", "team_id", "channel_id")
_FORM_FIELDS = (
    "token",
    "team_id",
    "team_domain",
    "enterprise_id",
    "enterprise_name",
    "channel_id",
    "channel_name",
    "user_id",
    "user_name",
    "command",
    "text",
    "response_url",
    "trigger_id",
    "api_app_id",
    "is_enterprise_install",
)


@dataclass  # a fresh __init__ that calls __post_init__ (Operation's own does not)
class SlashCommandOperation(Operation):
    """Documents the form body, which the handler reads raw: the signature covers the bytes, not a parsed form."""

    def __post_init__(self) -> None:
        properties: dict[str, Schema | Any] = {name: Schema(type=OpenAPIType.STRING) for name in _FORM_FIELDS}
        properties["text"] = Schema(
            type=OpenAPIType.STRING,
            description="The proposal, e.g. `p=21% k=10 cost=3w baseline=100ms target=attention_softmax`; `help`.",
        )
        self.request_body = RequestBody(
            content={FORM: OpenAPIMediaType(schema=Schema(type=OpenAPIType.OBJECT, properties=properties))},
            description="Slack's slash-command payload, signed with the app's signing secret.",
            required=True,
        )


def signed(secret: str, body: bytes, timestamp: str | None, signature: str | None) -> bool:
    """Whether Slack signed `body` with `secret` within the last five minutes (Slack's SDK decides)."""
    try:
        return SignatureVerifier(secret).is_valid(body=body, timestamp=timestamp, signature=signature)
    except (ValueError, TypeError, OverflowError):
        # The SDK raises on a timestamp that is not an integer (or too large for a float), a body that is not
        # UTF-8, or a signature with non-ASCII characters: each is simply not a valid signature.
        return False


def replay_key(timestamp: str | None, signature: str | None) -> str:
    """The idempotency key of one signed request: Slack signs each request afresh, so only a replay repeats it."""
    return "slack:" + hashlib.sha256(f"{timestamp}:{signature}".encode()).hexdigest()


@post(
    "/slack/commands",
    status_code=200,
    tags=["slack"],
    # Slack cannot send a bearer token; the signing secret is this route's authentication.
    opt={"scope": "public"},
    operation_class=SlashCommandOperation,
    responses={
        401: ResponseSpec(
            Problem,
            description="Not signed by Slack, mis-signed or stale",
            media_type=PROBLEM_JSON,
            generate_examples=False,
        ),
        404: ResponseSpec(
            Problem,
            description="Slack is not configured on this server",
            media_type=PROBLEM_JSON,
            generate_examples=False,
        ),
    },
)
async def slack_command(
    request: Request[Any, Any, Any],
    state: State,
    decisions: NamedDependency[DecisionService],
    timestamp: Annotated[
        str | None, HeaderParameter(name="X-Slack-Request-Timestamp", description="Unix time Slack signed the request.")
    ] = None,
    signature: Annotated[
        str | None, HeaderParameter(name="X-Slack-Signature", description="`v0=` + HMAC-SHA256 of the request.")
    ] = None,
) -> Response[SlackMessage]:
    """The `/worthit` slash command: evaluate the proposal in `text`, store the decision and answer in Block Kit.

    Ephemeral unless the text says `public`; `help`, or a text that does not read, answers with the usage.
    """
    settings: Settings = state.settings
    secret = settings.slack_signing_secret
    if secret is None or not secret.strip():
        raise NotFound("Slack is not configured on this server (set WORTHIT_SLACK_SIGNING_SECRET)")
    body = await request.body()
    if not signed(secret, body, timestamp, signature):
        raise NotAuthorizedException(
            detail="Expected a request signed by Slack within the last 5 minutes "
            "(X-Slack-Signature, X-Slack-Request-Timestamp), got none or a mismatch"
        )
    form = {name: values[0] for name, values in parse_qs(body.decode("utf-8"), keep_blank_values=True).items()}
    parsed = parse(form.get("text", ""))
    if isinstance(parsed, Help):
        return Response(usage_message(), status_code=200)
    if not isinstance(parsed, Command):
        return Response(invalid_message(parsed.token, parsed.reason), status_code=200)
    detail = {name: form[name] for name in SOURCE_FIELDS if form.get(name)}
    try:
        decision, _ = await decisions.create(
            parsed.proposal,
            source="slack",
            source_detail=detail,
            # A replay (the same signed request again, within the window the signature allows) is an idempotent
            # retry: it answers the decision the first one stored and stores nothing. Keyed in the database, so it
            # holds across workers and replicas.
            idempotency_key=replay_key(timestamp, signature),
            body_hash=request_hash(body, ""),
        )
    except InvalidInput as exc:
        return Response(usage_message(f"worthit could not evaluate this: {exc.detail}"), status_code=200)
    page_path = None
    if settings.link_secret is not None:
        # Signed, so the person who follows it needs no token to read this one decision (until it expires).
        page_path, _ = signed_path(decision.id, settings.link_secret, settings.link_ttl_days * 86400)
    message = decision_message(
        decision,
        decision_id=decision.id,
        target=parsed.proposal.target,
        public_url=settings.public_url,
        response_type="in_channel" if parsed.public else "ephemeral",
        page_path=page_path,
    )
    return Response(message, status_code=200)
