"""`worthit slack-bot`: a slack_bolt app in Socket Mode, a client of worthit's public API.

The bot opens an outbound WebSocket to Slack (no public endpoint), receives `/worthit`, mentions, button clicks and
modal submissions over it, acknowledges each at once (Slack's 3 seconds) and answers after the API has. Every store
goes through `POST /v1/decisions…` with an Idempotency-Key derived from what Slack redelivers unchanged (the
command's `trigger_id`, the event's `event_id`, the modal's view id), so a redelivered envelope or a reconnect never
stores twice. It imports neither litestar nor sqlalchemy, and holds no database URL.

Adapter, by measurement: bolt's `websocket_client` adapter (threads, on the small `websocket-client` package). The
built-in one (`slack_bolt.adapter.socket_mode`, no extra package) never recovered from a socket cut without a close
frame in tests/e2e/test_slackbot.py: its reconnect ran on the dying session's own thread and the session stayed
broken ("Failed to check the state of sock ... Broken pipe" every ping interval).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

import msgspec
from slack_bolt import App
from slack_bolt.adapter.socket_mode.websocket_client import SocketModeHandler
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.websocket_client import SocketModeClient

from worthit.service.slack.blocks import LABELS, invalid_message, usage_message
from worthit.service.slack.text import Command, Help, parse
from worthit.service.slackbot import messages
from worthit.service.slackbot.api import ApiError, WorthitApi

__all__ = [
    "MENTION",
    "SLACK_API_URL",
    "BotConfig",
    "JsonLines",
    "Place",
    "Seen",
    "configure_logging",
    "create_app",
    "main",
    "run",
]

log = logging.getLogger("worthit.slackbot")
# A label stops at the next `<` (Slack escapes it inside one), so no mention scans past the next one: with `[^>]*`,
# a text of many unclosed `<@U|` was quadratic.
MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^<>]*)?>")
SLACK_API_URL = "https://slack.com/api/"


@dataclass(frozen=True, kw_only=True)
class BotConfig:
    """What the bot needs; tokens are never logged nor shown in `repr`."""

    app_token: str
    bot_token: str
    worthit_url: str
    worthit_token: str | None
    public_url: str | None = None
    slack_api_url: str = SLACK_API_URL
    ping_interval_s: float = 10.0

    def __repr__(self) -> str:
        return f"BotConfig(worthit_url={self.worthit_url!r}, public_url={self.public_url!r}, tokens=<hidden>)"

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> BotConfig:
        """From SLACK_APP_TOKEN, SLACK_BOT_TOKEN, WORTHIT_URL, WORTHIT_TOKEN, WORTHIT_PUBLIC_URL and SLACK_API_URL."""

        def value(name: str) -> str | None:
            found = (env.get(name) or "").strip()
            return found or None

        problems = []
        app_token, bot_token = value("SLACK_APP_TOKEN"), value("SLACK_BOT_TOKEN")
        if app_token is None or not app_token.startswith("xapp-"):
            problems.append("SLACK_APP_TOKEN: expected the app-level token (xapp-…, scope connections:write)")
        if bot_token is None or not bot_token.startswith("xoxb-"):
            problems.append("SLACK_BOT_TOKEN: expected the bot token (xoxb-…)")
        worthit_url = overrides.pop("worthit_url", None) or value("WORTHIT_URL")
        if worthit_url is None:
            problems.append("WORTHIT_URL: expected the worthit API's address, e.g. http://worthit:80")
        if problems or app_token is None or bot_token is None or worthit_url is None:
            raise ValueError("; ".join(problems))
        fields: dict[str, Any] = {
            "public_url": value("WORTHIT_PUBLIC_URL"),
            "slack_api_url": value("SLACK_API_URL") or SLACK_API_URL,
        } | {key: val for key, val in overrides.items() if val is not None}
        return cls(
            app_token=app_token,
            bot_token=bot_token,
            worthit_url=worthit_url,
            worthit_token=value("WORTHIT_TOKEN"),
            **fields,
        )


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, and the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname.lower()}
        fields = getattr(record, "fields", None)
        line |= fields if isinstance(fields, dict) else {"message": record.getMessage()}
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(line, default=str)


class Seen:
    """Keys of envelopes already answered, newest last; a key is claimed while it is handled, released on failure."""

    def __init__(self, size: int = 10_000) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def claim(self, key: str) -> bool:
        with self._lock:
            if key in self._keys:
                return False
            self._keys[key] = None
            while len(self._keys) > self._size:
                self._keys.popitem(last=False)
            return True

    def release(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)


@dataclass(frozen=True, kw_only=True)
class Place:
    """Where answers go: a channel, a thread in it, or only to one user (an ephemeral message has no thread)."""

    channel: str
    user: str
    thread_ts: str | None = None
    ephemeral: bool = False

    def post(self, client: WebClient, message: dict[str, Any]) -> None:
        if self.ephemeral:
            client.chat_postEphemeral(channel=self.channel, user=self.user, **message)
        else:
            client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, **message)


def _place_of_action(body: dict[str, Any]) -> Place:
    container = body.get("container") or {}
    message = body.get("message") or {}
    return Place(
        channel=str(container.get("channel_id") or (body.get("channel") or {}).get("id")),
        user=str(body["user"]["id"]),
        thread_ts=message.get("thread_ts") or message.get("ts") or container.get("message_ts"),
        ephemeral=bool(container.get("is_ephemeral")),
    )


def _metadata(place: Place, decision_id: str) -> str:
    """What a modal's submission needs to answer where the button was, kept in the view's private_metadata."""
    return json.dumps(
        {"d": decision_id, "c": place.channel, "u": place.user, "th": place.thread_ts, "e": place.ephemeral}
    )


def _from_metadata(text: str) -> tuple[Place, str]:
    data = json.loads(text)
    place = Place(channel=data["c"], user=data["u"], thread_ts=data["th"], ephemeral=data["e"])
    return place, str(data["d"])


def _event(kind: str, key: str | None, started: float, **fields: Any) -> None:
    """The one log line of an event."""
    record = {"event": kind, "key": key, "ms": round((time.monotonic() - started) * 1000, 1)} | fields
    log.info(kind, extra={"fields": record})


def create_app(config: BotConfig, *, api: WorthitApi | None = None) -> App:
    """The bolt app with every listener; `api` defaults to a client of `config.worthit_url`."""
    client = WebClient(token=config.bot_token, base_url=config.slack_api_url)
    app = App(client=client, logger=logging.getLogger("worthit.slackbot.bolt"))
    worthit = api or WorthitApi(config.worthit_url, config.worthit_token)
    seen = Seen()

    def once(kind: str, key: str, started: float, work: Callable[[], dict[str, Any]]) -> None:
        """Run `work` unless `key` was answered already; log one line either way."""
        if not seen.claim(key):
            _event(kind, key, started, outcome="duplicate")
            return
        try:
            fields = work()
        except Exception:
            seen.release(key)
            log.exception(kind, extra={"fields": {"event": kind, "key": key, "outcome": "failed"}})
            return
        _event(kind, key, started, **fields)

    def decide(text: str, place: Place, detail: dict[str, str], key: str, client: WebClient) -> dict[str, Any]:
        parsed = parse(text)
        if isinstance(parsed, Help):
            place.post(client, _plain(usage_message()))
            return {"outcome": "usage"}
        if not isinstance(parsed, Command):
            place.post(client, _plain(invalid_message(parsed.token, parsed.reason)))
            return {"outcome": "invalid", "token": parsed.token}
        proposal = msgspec.to_builtins(parsed.proposal)
        try:
            document = worthit.create_decision(proposal, source_detail=detail, key=key)
        except ApiError as exc:
            place.post(client, messages.problem_reply("worthit could not decide this", exc.detail))
            return {"outcome": "api_error", "status": exc.status}
        page_path = worthit.page_link(str(document["id"])) if config.public_url else None
        place.post(client, messages.decision_reply(document, config.public_url, page_path))
        return {"outcome": "decided", "decision_id": document["id"], "verdict": document["verdict"]}

    @app.command("/worthit")
    def slash_command(ack: Any, body: dict[str, Any], client: WebClient) -> None:
        started = time.monotonic()
        parsed = parse(body.get("text", ""))
        if not isinstance(parsed, Command):
            # The usage needs no API: answer it in the acknowledgement itself.
            message = usage_message() if isinstance(parsed, Help) else invalid_message(parsed.token, parsed.reason)
            ack(**_plain(message), response_type="ephemeral")
            _event("slash_command", body.get("trigger_id"), started, outcome="usage", user=body.get("user_id"))
            return
        ack()
        place = Place(channel=body["channel_id"], user=body["user_id"], ephemeral=not parsed.public)
        detail = {name: body[name] for name in ("user_id", "team_id", "channel_id") if body.get(name)}
        key = f"slack-command-{body['trigger_id']}"
        once("slash_command", key, started, lambda: decide(body.get("text", ""), place, detail, key, client))

    @app.event("app_mention")
    def mention(body: dict[str, Any], event: dict[str, Any], client: WebClient) -> None:
        started = time.monotonic()
        text = MENTION.sub(" ", event.get("text", "")).strip()
        place = Place(
            channel=event["channel"], user=event.get("user", ""), thread_ts=event.get("thread_ts") or event["ts"]
        )
        detail = {"user_id": event.get("user"), "team_id": body.get("team_id"), "channel_id": event["channel"]}
        key = f"slack-event-{body.get('event_id') or event['ts']}"
        once(
            "app_mention",
            key,
            started,
            lambda: decide(text, place, {k: v for k, v in detail.items() if v}, key, client),
        )

    @app.action(messages.WHY)
    def why(ack: Any, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        started, place, decision_id = time.monotonic(), _place_of_action(body), str(action["value"])
        try:
            place.post(client, messages.why_reply(worthit.decision(decision_id)))
            outcome: dict[str, Any] = {"outcome": "explained"}
        except ApiError as exc:
            place.post(client, messages.problem_reply("worthit could not explain this decision", exc.detail))
            outcome = {"outcome": "api_error", "status": exc.status}
        _event("why", body.get("trigger_id"), started, decision_id=decision_id, **outcome)

    @app.action(messages.OUTCOME)
    def open_outcome(ack: Any, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        started, place, decision_id = time.monotonic(), _place_of_action(body), str(action["value"])
        target = _target(body)
        client.views_open(
            trigger_id=body["trigger_id"], view=messages.outcome_modal(_metadata(place, decision_id), target)
        )
        _event("outcome_modal", body.get("trigger_id"), started, decision_id=decision_id, outcome="opened")

    @app.action(messages.POLICY)
    def open_policy(ack: Any, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        started, place, decision_id = time.monotonic(), _place_of_action(body), str(action["value"])
        try:
            names = [str(policy["name"]) for policy in worthit.policies()]
        except ApiError as exc:
            place.post(client, messages.problem_reply("worthit could not list its policies", exc.detail))
            _event("policy_modal", body.get("trigger_id"), started, outcome="api_error", status=exc.status)
            return
        metadata = _metadata(place, decision_id)
        client.views_open(trigger_id=body["trigger_id"], view=messages.policy_modal(metadata, names))
        _event("policy_modal", body.get("trigger_id"), started, decision_id=decision_id, outcome="opened")

    @app.view(messages.OUTCOME_VIEW)
    def record_outcome(ack: Any, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        started = time.monotonic()
        values = _values(view)
        report: dict[str, Any] = {}
        for name in ("target_ms", "step_ms"):
            if values.get(name) not in (None, ""):
                report[name] = float(values[name])
        if not report:
            ack(response_action="errors", errors={"target_ms": "Give the target's time, the scope's, or both"})
            _event("outcome", view.get("id"), started, outcome="incomplete")
            return
        ack()
        if values.get("note"):
            report["note"] = values["note"]
        place, decision_id = _from_metadata(view["private_metadata"])
        key = f"slack-view-{view['id']}"

        def work() -> dict[str, Any]:
            try:
                outcome = worthit.record_outcome(decision_id, report, key=key, user_id=str(body["user"]["id"]))
            except ApiError as exc:
                place.post(client, messages.problem_reply("worthit did not record the outcome", exc.detail))
                return {"outcome": "api_error", "status": exc.status, "decision_id": decision_id}
            place.post(client, messages.outcome_reply(outcome))
            return {"outcome": "recorded", "decision_id": decision_id}

        once("outcome", key, started, work)

    @app.view(messages.POLICY_VIEW)
    def reevaluate(ack: Any, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        ack()
        started = time.monotonic()
        place, decision_id = _from_metadata(view["private_metadata"])
        policy = str(_values(view).get("policy") or "")
        try:
            target = worthit.decision(decision_id)["proposal"].get("target")
            result = worthit.reevaluate(decision_id, policy)
        except ApiError as exc:
            place.post(client, messages.problem_reply(f"worthit could not re-evaluate under {policy!r}", exc.detail))
            _event("reevaluate", view.get("id"), started, outcome="api_error", status=exc.status)
            return
        page_path = worthit.page_link(decision_id) if config.public_url else None
        reply = messages.reevaluation_reply(
            result, target=target, policy=policy, public_url=config.public_url, page_path=page_path
        )
        place.post(client, reply)
        _event("reevaluate", view.get("id"), started, decision_id=decision_id, policy=policy, outcome="answered")

    return app


def _plain(message: Any) -> dict[str, Any]:
    built: dict[str, Any] = msgspec.to_builtins(message)
    built.pop("response_type", None)
    return built


def _target(body: dict[str, Any]) -> str | None:
    """The target named in the decision message's header (for a modal's label; clipped as the header is)."""
    for block in (body.get("message") or {}).get("blocks", []):
        if block.get("type") == "header":
            heading = str(block["text"]["text"])
            for emoji, label in LABELS.values():
                if heading.startswith(prefix := f"{emoji} {label}: "):
                    return heading[len(prefix) :] or None
    return None


def _values(view: dict[str, Any]) -> dict[str, Any]:
    """A submitted view's inputs by block id: text and numbers as typed, a select's chosen value."""
    found: dict[str, Any] = {}
    for block_id, elements in ((view.get("state") or {}).get("values") or {}).items():
        for element in elements.values():
            selected = element.get("selected_option")
            found[block_id] = selected["value"] if selected else element.get("value")
    return found


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("worthit.slackbot").setLevel(level.upper())
    # The SDKs log payloads (and, at debug, request headers) on their own loggers: keep them to warnings.
    for name in ("slack_bolt", "slack_sdk", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)


def run(config: BotConfig) -> int:
    """Connect and serve until SIGTERM or SIGINT; reconnects on its own when the socket drops."""
    app = create_app(config)
    handler = SocketModeHandler(app, config.app_token, ping_interval=config.ping_interval_s)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    started = time.monotonic()
    try:
        handler.connect()  # type: ignore[no-untyped-call]
    except SlackApiError as exc:
        _event("connect", None, started, outcome="refused", error=str(exc.response.get("error")))
        return 1
    _event("connect", None, started, outcome="connected", worthit_url=config.worthit_url)
    stop.wait()
    close(handler.client)
    _event("stop", None, started, outcome="stopped")
    return 0


def close(client: SocketModeClient) -> None:
    """What slack_sdk's SocketModeClient.close() does, less its wait for the thread that reads the socket.

    That thread sits in websocket-client's select() with a 10 s timeout, which closing the socket does not always
    wake (its close() skips the shutdown() that would when the close handshake races the reader), and close() joined
    it: SIGTERM took 10 s in 7 of the 13 bot tests. The reader is a daemon thread with nothing left to do once the
    socket is closed, so it is told to stop and left; what matters is waited for: the close handshake, and the
    envelopes already taken, which finish (their acks and replies) before the process exits."""
    client.closed = True
    client.auto_reconnect_enabled = False
    client.current_session_runner.event.set()  # no new socket: the reader's loop ends with this one
    client.disconnect()
    client.current_app_monitor.shutdown()  # type: ignore[no-untyped-call]
    client.message_processor.shutdown()  # type: ignore[no-untyped-call]
    client.message_workers.shutdown(wait=True)


def main(args: Any) -> int:
    """`worthit slack-bot`: settings from the environment, flags override the addresses."""
    configure_logging(args.log_level or os.environ.get("WORTHIT_LOG_LEVEL") or "info")
    try:
        config = BotConfig.from_env(
            os.environ, worthit_url=args.worthit_url, public_url=args.public_url, slack_api_url=args.slack_api_url
        )
    except ValueError as exc:
        print(f"worthit slack-bot: {exc}", file=sys.stderr)
        return 2
    return run(config)
