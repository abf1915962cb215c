"""`GET /v1/decisions/{id}/link`: a signed, expiring, read-only link to a decision's page, for API clients.

The server alone holds the key (`WORTHIT_LINK_SECRET`), so a client that posts messages with links (the Socket Mode
bot, a script) asks for one with its own token; whoever may read the decision may hand out a link that shows it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from litestar import get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath

from worthit.service.decisions.service import DecisionService
from worthit.service.errors import NotFound
from worthit.service.http.page_access import signed_path
from worthit.service.http.problems import problem_responses
from worthit.service.settings import Settings

__all__ = ["PageLink", "decision_link"]


class PageLink(msgspec.Struct, kw_only=True):
    """A link that opens one decision's page without a token, until `expires_at`."""

    path: str
    """`/decisions/{id}?link=…`, to put after the server's public address."""
    url: str | None
    """The whole link, when the server knows its public address (`WORTHIT_PUBLIC_URL`)."""
    expires_at: datetime


@get(
    "/v1/decisions/{decision_id:str}/link",
    opt={"scope": "read"},
    tags=["decisions"],
    responses=problem_responses(404),
)
async def decision_link(
    decision_id: FromPath[str], state: State, decisions: NamedDependency[DecisionService]
) -> PageLink:
    """A signed link to the decision's page (404 when the decision is unknown, or signed links are off)."""
    settings: Settings = state.settings
    if settings.link_secret is None:
        raise NotFound("Signed links are off on this server (set WORTHIT_LINK_SECRET)")
    decision = await decisions.get(decision_id)
    path, expires = signed_path(decision.id, settings.link_secret, settings.link_ttl_days * 86400)
    url = settings.public_url.rstrip("/") + path if settings.public_url else None
    return PageLink(path=path, url=url, expires_at=datetime.fromtimestamp(expires, UTC))
