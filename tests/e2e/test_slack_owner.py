"""Decisions made from Slack belong to the Slack user who made them: only they, through Slack, or an admin token
record the outcome that moves their team's calibration; any other write token gets 403 and stores nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Server
from tests.e2e.test_slack import SECRET, command
from tests.e2e.test_trust import create_token

pytestmark = pytest.mark.e2e

USER = "U2147483697"  # who signs test_slack's commands
OUTCOME = {"step_ms": 90}


def _bearer(token: str, speaks_for: str | None = None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} | ({"worthit-source": speaks_for} if speaks_for else {})


def test_an_outcome_of_a_slack_decision_needs_its_slack_user_or_an_admin(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    writer = create_token(database_url, "write", "planner")
    admin = create_token(database_url, "admin", "platform")
    bot = create_token(database_url, "slack", "slack-bot")
    server = server_factory(database_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET})
    with server.client() as client:
        # Through Slack's signed route: no token, and the Slack user is the owner.
        answered = command(client, "p=21% k=10 cost=3w baseline=100ms target=attention_softmax")
        assert answered.status_code == 200
        [from_route] = client.get("/v1/decisions", headers=_bearer(writer)).json()["items"]
        assert (from_route["source"], from_route["source_detail"]["user_id"]) == ("slack", USER)
        # Through the bot's token, which names the user.
        made = client.post(
            "/v1/decisions",
            json={"target": "layernorm", "p": 0.2, "k": 4, "baseline_ms": 100, "cost_weeks": 1},
            headers=_bearer(bot, f"slack; user_id={USER}; team_id=T0001; channel_id=C1"),
        )
        assert made.status_code == 201, made.text
        from_bot = made.json()
        assert (from_bot["source"], from_bot["source_detail"]["user_id"]) == ("slack", USER)

        for decision in (from_route, from_bot):
            path = f"/v1/decisions/{decision['id']}/outcome"
            # Any write token, even one saying it is the user: 403, and nothing is recorded.
            for headers, status in (
                (_bearer(writer), 403),
                (_bearer(writer, f"slack; user_id={USER}"), 403),
                (_bearer(bot, "slack; user_id=U0OTHER"), 403),
                (_bearer(bot), 403),
            ):
                refused = client.post(path, json=OUTCOME, headers=headers)
                assert refused.status_code == status, (headers, refused.text)
                assert refused.headers["content-type"].startswith("application/problem+json")
            assert client.get(path, headers=_bearer(writer)).status_code == 404

        owned = client.post(
            f"/v1/decisions/{from_bot['id']}/outcome", json=OUTCOME, headers=_bearer(bot, f"slack; user_id={USER}")
        )
        assert owned.status_code == 201, owned.text
        by_admin = client.post(f"/v1/decisions/{from_route['id']}/outcome", json=OUTCOME, headers=_bearer(admin))
        assert by_admin.status_code == 201, by_admin.text
