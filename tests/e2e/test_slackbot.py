"""`worthit slack-bot` end to end: the real bot process in Socket Mode against a stand-in for Slack on 127.0.0.1
(tests/slack_standin.py) and a real worthit server (SQLite and PostgreSQL) behind a TCP proxy that can cut it.

Envelopes follow Slack's documented shapes (those of slack_sdk/bolt's own Socket Mode fixtures). Counting decisions
through the API is how "stored once" is checked: the bot is a client, so the test is one too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, worthit
from tests.slack_standin import APP_TOKEN, BOT_TOKEN, BOT_USER, SlackStandIn
from tests.tcp_proxy import Proxy

pytestmark = pytest.mark.e2e

PUBLIC_URL = "https://worthit.example.com"
USER, TEAM, CHANNEL = "U2147483697", "T0001", "C2147483705"
PROPOSAL = "p=21% k=10 cost=3w baseline=100ms target=attention_softmax"


@dataclass
class Bot:
    slack: SlackStandIn
    api: httpx.Client
    proxy: Proxy
    process: subprocess.Popen[bytes]
    log: Path

    def decisions(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.api.get("/v1/decisions", params={"limit": 200}).json()["items"]
        return items

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def _token(database_url: str) -> str:
    created = worthit("token", "create", "--name", "slack-bot", "--scope", "slack", "--database", database_url)
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


@pytest.fixture
def bot(database_url: str, server_factory: Callable[..., Server], tmp_path: Path) -> Iterator[Bot]:
    server = server_factory(database_url, env={"WORTHIT_REQUIRE_AUTH": "1"})
    token = _token(database_url)
    host, port = server.url.removeprefix("http://").split(":")
    proxy = Proxy(host, int(port))
    slack = SlackStandIn()
    log = tmp_path / "bot.log"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("WORTHIT_", "SLACK_"))}
    env |= {
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "WORTHIT_URL": f"http://127.0.0.1:{proxy.port}",
        "WORTHIT_TOKEN": token,
        "WORTHIT_PUBLIC_URL": PUBLIC_URL,
    }
    with log.open("ab") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "worthit.service.cli", "slack-bot"],
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    api = httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {token}"}, timeout=10)
    try:
        slack.wait(lambda: slack.connected() == 1)
        yield Bot(slack=slack, api=api, proxy=proxy, process=process, log=log)
    finally:
        process.terminate()
        process.wait(timeout=30)
        api.close()
        proxy.close()
        slack.close()
    assert process.returncode == 0, log.read_text()
    text = log.read_text()
    assert BOT_TOKEN not in text
    assert APP_TOKEN not in text
    assert token not in text


def slash(text: str, *, trigger_id: str | None = None, envelope_id: str | None = None) -> dict[str, Any]:
    return {
        "envelope_id": envelope_id or str(uuid.uuid4()),
        "type": "slash_commands",
        "accepts_response_payload": True,
        "payload": {
            "token": "verification-token",
            "team_id": TEAM,
            "team_domain": "example",
            "channel_id": CHANNEL,
            "channel_name": "perf",
            "user_id": USER,
            "user_name": "ada",
            "command": "/worthit",
            "text": text,
            "api_app_id": "A0001",
            "is_enterprise_install": "false",
            "response_url": "https://hooks.slack.com/commands/T0001/1/xxx",
            "trigger_id": trigger_id or f"13345224609.738474920.{uuid.uuid4().hex}",
        },
    }


def mention(text: str, *, ts: str, event_id: str | None = None, retry: int = 0) -> dict[str, Any]:
    return {
        "envelope_id": str(uuid.uuid4()),
        "type": "events_api",
        "accepts_response_payload": False,
        "retry_attempt": retry,
        "retry_reason": "timeout" if retry else "",
        "payload": {
            "token": "verification-token",
            "team_id": TEAM,
            "api_app_id": "A0001",
            "event": {
                "client_msg_id": str(uuid.uuid4()),
                "type": "app_mention",
                "text": f"<@{BOT_USER}> {text}",
                "user": USER,
                "ts": ts,
                "team": TEAM,
                "channel": CHANNEL,
                "event_ts": ts,
            },
            "type": "event_callback",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": 1700000000,
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": TEAM,
                    "user_id": BOT_USER,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": f"4-eyJldCI6ImFwcF9tZW50aW9uIn0-{TEAM}-{CHANNEL}",
        },
    }


def click(action_id: str, message: dict[str, Any], *, thread_ts: str) -> dict[str, Any]:
    """A block_actions envelope for the button `action_id` of the bot's message `message` (as posted)."""
    button = next(
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if element["action_id"] == action_id
    )
    return {
        "envelope_id": str(uuid.uuid4()),
        "type": "interactive",
        "accepts_response_payload": False,
        "payload": {
            "type": "block_actions",
            "user": {"id": USER, "username": "ada", "name": "ada", "team_id": TEAM},
            "api_app_id": "A0001",
            "token": "verification-token",
            "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL, "is_ephemeral": False},
            "trigger_id": f"13345224609.738474920.{uuid.uuid4().hex}",
            "team": {"id": TEAM, "domain": "example"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": CHANNEL, "name": "perf"},
            "message": {
                "type": "message",
                "user": BOT_USER,
                "ts": message["ts"],
                "thread_ts": thread_ts,
                "text": message["text"],
                "blocks": message["blocks"],
            },
            "state": {"values": {}},
            "response_url": "https://hooks.slack.com/actions/T0001/1/xxx",
            "actions": [button | {"block_id": "worthit_actions", "action_ts": "1700000001.000100"}],
        },
    }


def submit(view: dict[str, Any], values: dict[str, dict[str, Any]], *, user: str = USER) -> dict[str, Any]:
    """A view_submission envelope for the opened modal `view` with the inputs `values` (block id → element state),
    submitted by the Slack user `user`."""
    submitted = view | {
        "state": {"values": {block: {"value": state} for block, state in values.items()}},
        "hash": "1700000002.abcd",
        "previous_view_id": None,
        "root_view_id": view["id"],
        "app_id": "A0001",
        "external_id": "",
        "app_installed_team_id": TEAM,
        "bot_id": "B0001",
    }
    return {
        "envelope_id": str(uuid.uuid4()),
        "type": "interactive",
        "accepts_response_payload": True,
        "payload": {
            "type": "view_submission",
            "team": {"id": TEAM, "domain": "example"},
            "user": {"id": user, "username": "ada", "name": "ada", "team_id": TEAM},
            "api_app_id": "A0001",
            "token": "verification-token",
            "trigger_id": f"13345224609.738474920.{uuid.uuid4().hex}",
            "view": submitted,
            "response_urls": [],
            "is_enterprise_install": False,
            "enterprise": None,
        },
    }


def acked(slack: SlackStandIn, envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return [ack for ack in slack.acks if ack.get("envelope_id") == envelope["envelope_id"]]


def text_of(message: dict[str, Any]) -> str:
    parts = [message.get("text") or ""]
    for block in message.get("blocks") or []:
        parts += [block["text"]["text"]] if "text" in block else []
        parts += [item["text"] for item in block.get("fields", []) + block.get("elements", []) if "text" in item]
    return "\n".join(str(part) for part in parts)


def test_a_slash_command_stores_one_decision_and_posts_the_message(bot: Bot) -> None:
    """`/worthit … public` is acknowledged, stored once with source slack, and posted with the buttons and the link;
    the same envelope redelivered stores and posts nothing more; without `public` the answer is ephemeral."""
    slack = bot.slack
    envelope = slash(PROPOSAL + " public")
    slack.send(envelope)
    slack.wait(lambda: slack.posts())
    assert acked(slack, envelope) == [{"envelope_id": envelope["envelope_id"]}]
    [(method, posted)] = slack.posts()
    assert method == "chat.postMessage"
    assert posted["channel"] == CHANNEL
    assert posted.get("thread_ts") is None
    [decision] = bot.decisions()
    assert decision["source"] == "slack"
    assert decision["source_detail"] == {"user_id": USER, "team_id": TEAM, "channel_id": CHANNEL}
    blocks = posted["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": ":white_check_mark: Fund: attention_softmax", "emoji": True},
    }
    assert posted["text"] == f"Fund: {decision['statement']}"
    assert f"<{PUBLIC_URL}/decisions/{decision['id']}|Open the decision>" in text_of(posted)
    assert [(e["action_id"], e["value"]) for e in blocks[-1]["elements"]] == [
        ("worthit_why", decision["id"]),
        ("worthit_outcome", decision["id"]),
        ("worthit_policy", decision["id"]),
    ]

    slack.send(envelope)  # Socket Mode redelivers an envelope it is unsure was acknowledged
    slack.wait(lambda: len(acked(slack, envelope)) == 2)
    slack.wait(lambda: any(line.get("outcome") == "duplicate" for line in bot.log_lines()))
    assert len(bot.decisions()) == 1
    assert len(slack.posts()) == 1

    private = slash(PROPOSAL)
    slack.send(private)
    slack.wait(lambda: len(slack.posts()) == 2)
    method, posted = slack.posts()[1]
    assert (method, posted["channel"], posted["user"]) == ("chat.postEphemeral", CHANNEL, USER)
    assert len(bot.decisions()) == 2


def test_help_and_typos_are_answered_in_the_acknowledgement(bot: Bot) -> None:
    """`help` and a text that does not read answer with the usage at once, in the ack, and store nothing."""
    slack = bot.slack
    typo = slash("p=21% k=10 cots=3w")
    slack.send(typo)
    [ack] = slack.wait(lambda: acked(slack, typo))
    assert ack["payload"]["response_type"] == "ephemeral"
    assert "Couldn't read `cots=3w`: unknown key `cots`; did you mean `cost`?" in text_of(ack["payload"])
    assert bot.decisions() == []


def test_a_mention_answers_in_its_thread_once(bot: Bot) -> None:
    """`@worthit …` stores one decision and answers in the mention's thread; a retried event stores nothing more."""
    slack = bot.slack
    envelope = mention(PROPOSAL, ts="1700000100.000200", event_id="Ev0MENTION01")
    slack.send(envelope)
    slack.wait(lambda: slack.posts())
    [(method, posted)] = slack.posts()
    assert (method, posted["channel"], posted["thread_ts"]) == ("chat.postMessage", CHANNEL, "1700000100.000200")
    [decision] = bot.decisions()
    assert decision["source_detail"] == {"user_id": USER, "team_id": TEAM, "channel_id": CHANNEL}
    assert decision["proposal"]["target"] == "attention_softmax"
    assert posted["blocks"][0]["text"]["text"] == ":white_check_mark: Fund: attention_softmax"

    retried = mention(PROPOSAL, ts="1700000100.000200", event_id="Ev0MENTION01", retry=1)
    slack.send(retried)
    slack.wait(lambda: acked(slack, retried))
    slack.wait(lambda: any(line.get("outcome") == "duplicate" for line in bot.log_lines()))
    assert len(bot.decisions()) == 1
    assert len(slack.posts()) == 1


def test_each_button_does_what_it_says(bot: Bot) -> None:
    """Why? explains in the thread; Record outcome opens a modal whose submission records the outcome; Under policy…
    opens a modal of the server's policies and answers the re-evaluation; an unknown policy answers the problem."""
    slack = bot.slack
    thread = "1700000200.000300"
    slack.send(mention(PROPOSAL + " fleet=20000", ts=thread))
    slack.wait(lambda: slack.posts())
    [(_, posted)] = slack.posts()
    message = posted | {"ts": slack.calls[-1][1].get("ts", "1700000000.999999")}
    [decision] = bot.decisions()

    slack.send(click("worthit_why", message, thread_ts=thread))
    slack.wait(lambda: len(slack.posts()) == 2)
    _, why = slack.posts()[1]
    assert why["thread_ts"] == thread
    assert why["blocks"][0]["text"]["text"] == "Why?"
    if "reasoning" in decision:
        first = decision["reasoning"][0]
        assert f"*1. {first['question']}*" in text_of(why)
    else:
        for finding in decision["findings"]:
            assert f"*{finding['rule']}* ({finding['effect']})" in text_of(why)
    assert f"Decided by `{decision['deciding_rule']}`" in text_of(why)

    slack.send(click("worthit_outcome", message, thread_ts=thread))
    [(_, opened)] = slack.wait(lambda: [c for c in slack.calls if c[0] == "views.open"])
    view = opened["view"] | {"id": "V0OUTCOME1", "team_id": TEAM}
    assert view["callback_id"] == "worthit_outcome_view"
    assert [block["block_id"] for block in view["blocks"]] == ["target_ms", "step_ms", "note"]
    empty = submit(view, {})
    slack.send(empty)
    [refused] = slack.wait(lambda: acked(slack, empty))
    assert refused["payload"]["response_action"] == "errors"
    assert bot.api.get(f"/v1/decisions/{decision['id']}/outcome").status_code == 404
    # Another Slack user's submission: the decision is its maker's, and moves their team's calibration.
    other = submit(view | {"id": "V0OUTCOME0"}, {"step_ms": {"type": "number_input", "value": "50"}}, user="U0OTHER")
    slack.send(other)
    slack.wait(lambda: len(slack.posts()) == 3)
    _, refused_reply = slack.posts()[2]
    assert "worthit did not record the outcome" in text_of(refused_reply)
    assert "made from Slack by U2147483697" in text_of(refused_reply)
    assert bot.api.get(f"/v1/decisions/{decision['id']}/outcome").status_code == 404
    filled = submit(view, {"step_ms": {"type": "number_input", "value": "83.5"}})
    slack.send(filled)
    slack.wait(lambda: len(slack.posts()) == 4)
    outcome = bot.api.get(f"/v1/decisions/{decision['id']}/outcome")
    assert outcome.status_code == 200
    assert outcome.json()["realized"]["step_ms"] == 83.5
    _, recorded = slack.posts()[3]
    assert recorded["thread_ts"] == thread
    assert recorded["text"].startswith(f"Outcome recorded for `{decision['id']}`. Speedup 1.198×")
    slack.send(filled)  # redelivered: the API's idempotency answers the same outcome, and nothing is posted twice
    slack.wait(lambda: len(acked(slack, filled)) == 2)
    assert len(slack.posts()) == 4

    slack.send(click("worthit_policy", message, thread_ts=thread))
    slack.wait(lambda: len([c for c in slack.calls if c[0] == "views.open"]) == 2)
    policy_view = [c for c in slack.calls if c[0] == "views.open"][1][1]["view"] | {"id": "V0POLICY01", "team_id": TEAM}
    names = [option["value"] for option in policy_view["blocks"][0]["element"]["options"]]
    assert names == [policy["name"] for policy in bot.api.get("/v1/policies").json()]
    assert "default" in names
    chosen = {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": "default"}, "value": "default"},
    }
    slack.send(submit(policy_view, {"policy": chosen}))
    slack.wait(lambda: len(slack.posts()) == 5)
    _, answered = slack.posts()[4]
    assert answered["thread_ts"] == thread
    assert answered["blocks"][0]["text"]["text"] == "Under *default* nothing changes (was default v1)."
    assert answered["blocks"][1]["text"]["text"] == ":white_check_mark: Fund: attention_softmax"

    missing = {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": "nope"}, "value": "nope"},
    }
    slack.send(submit(policy_view, {"policy": missing}))
    slack.wait(lambda: len(slack.posts()) == 6)
    _, problem = slack.posts()[5]
    assert problem["text"].startswith(":warning: worthit could not re-evaluate under 'nope': ")
    assert "nope" in problem["text"].split(": ", 2)[2]
    assert len(bot.decisions()) == 1


def test_a_dropped_socket_reconnects_and_stores_nothing_twice(bot: Bot) -> None:
    """The stand-in cuts the socket; the bot opens a new connection by itself; the envelope redelivered on it is not
    stored again, and a new one is."""
    slack = bot.slack
    first = slash(PROPOSAL + " public")
    slack.send(first)
    slack.wait(lambda: slack.posts())
    served = slack.sockets_served
    slack.drop()
    slack.wait(lambda: slack.sockets_served > served and slack.connected() == 1)
    slack.send(first)
    second = mention("p=0.3 k=2 cost=1w baseline=50ms target=gemm_qkv", ts="1700000300.000100")
    slack.send(second)
    slack.wait(lambda: len(slack.posts()) == 2)
    slack.wait(lambda: acked(slack, first)[1:])
    assert sorted(d["proposal"]["target"] for d in bot.decisions()) == ["attention_softmax", "gemm_qkv"]
    assert len(slack.posts()) == 2


def test_an_api_outage_is_answered_and_the_bot_recovers(bot: Bot) -> None:
    """With the API unreachable the envelope is still acknowledged and the thread gets a readable reply, nothing is
    stored; when the API is back the next mention is decided."""
    slack = bot.slack
    bot.proxy.down()
    down = mention(PROPOSAL, ts="1700000400.000100")
    slack.send(down)
    slack.wait(lambda: slack.posts())
    assert acked(slack, down)
    [(_, reply)] = slack.posts()
    assert reply["thread_ts"] == "1700000400.000100"
    assert (
        reply["text"] == ":warning: worthit could not decide this: worthit is unreachable (ConnectError); tried 4 times"
    )
    bot.proxy.up()
    assert bot.decisions() == []
    slack.send(mention(PROPOSAL, ts="1700000401.000100"))
    slack.wait(lambda: len(slack.posts()) == 2)
    _, answer = slack.posts()[1]
    assert answer["blocks"][0]["text"]["text"] == ":white_check_mark: Fund: attention_softmax"
    assert len(bot.decisions()) == 1
    events = [line["event"] for line in bot.log_lines() if line.get("event") in ("app_mention", "slash_command")]
    assert events == ["app_mention", "app_mention"]


def test_the_bot_loads_no_server_and_needs_its_tokens() -> None:
    """The bot's modules import neither litestar nor sqlalchemy nor service.db; started without tokens it exits 2
    naming what is missing."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, worthit.service.cli, worthit.service.slackbot.app; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litestar', 'sqlalchemy', 'asyncpg') "
            "or m.startswith('worthit.service.db')))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert probe.stdout.strip() == "[]"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("WORTHIT_", "SLACK_"))}
    refused = worthit("slack-bot", env=env | {"SLACK_BOT_TOKEN": "xoxp-user-token"})
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "worthit slack-bot: SLACK_APP_TOKEN: expected the app-level token (xapp-…, scope connections:write); "
        "SLACK_BOT_TOKEN: expected the bot token (xoxb-…); WORTHIT_URL: expected the worthit API's address, "
        "e.g. http://worthit:80"
    )
