"""A client generated from openapi/openapi.json by openapi-python-client, as a planning tool would, against a real
server with auth on: the committed document is one a generator accepts, and what it declares is what the server
answers (a status or a header missing from the document makes the generated client raise or return nothing).

The client is generated once per module (2-3 s on a loaded 2-core machine), offline, from the committed file and
its generator configuration (openapi/generator.yaml), without the formatting hooks (ruff over the output: cosmetic
and slow).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT, Server
from tests.e2e.test_trust import create_token

pytestmark = pytest.mark.e2e

PACKAGE = "worthit_generated_client"
SEED = ROOT / "tests" / "data" / "profiles" / "seed_part2"
ATTENTION = {
    "title": "attention_softmax 10x",
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference", "model": "llama-8b", "dtype": "bf16", "device": "MI300X"},
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated package, imported; generation must succeed and print no warning."""
    where = tmp_path_factory.mktemp("client")
    config = where / "generator.yaml"
    config.write_text((ROOT / "openapi" / "generator.yaml").read_text() + "post_hooks: []\n")
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("openapi-python-client")),
            "generate",
            "--path",
            str(ROOT / "openapi" / "openapi.json"),
            "--output-path",
            str(where / PACKAGE),
            "--meta",
            "none",
            "--config",
            str(config),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower(), output
    assert "error" not in output.lower(), output
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _module(package: ModuleType, name: str) -> ModuleType:
    return importlib.import_module(f"{package.__name__}.{name}")


def test_generated_client_round_trips_the_api(
    generated: ModuleType, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """Create (201, then the 200 of a replay), read, list (by team, since a date-time), outcome, policy PUT (JSON and
    TOML), re-evaluate, profile upload (raw and multipart) and the profile list, each parsed into the generated
    models (functions named by the document's operation ids), on a server that requires tokens."""
    admin = create_token(sqlite_url, "admin", "planning-tool")
    server = server_factory(sqlite_url)
    with server.client() as plain:
        served = plain.get("/schema/openapi.json")
        assert served.status_code == 200
        assert served.json() == json.loads((ROOT / "openapi" / "openapi.json").read_text()), "served = committed"
    with (
        _module(generated, "client").AuthenticatedClient(base_url=server.url, token=admin) as client,
        _module(generated, "client").Client(base_url=server.url) as anonymous,
    ):
        _round_trip(generated, client, anonymous)


def _round_trip(generated: ModuleType, client: Any, anonymous: Any) -> None:
    api, models = "api", _module(generated, "models")
    types = _module(generated, "types")

    create = _module(generated, f"{api}.decisions.create_decision")
    refused = create.sync_detailed(client=anonymous, body=models.Proposal.from_dict(ATTENTION))
    assert refused.status_code == 401
    assert isinstance(refused.parsed, models.Problem)

    first = create.sync_detailed(client=client, body=models.Proposal.from_dict(ATTENTION), idempotency_key="a1")
    assert first.status_code == 201
    decision = first.parsed
    assert isinstance(decision, models.Decision)
    assert first.headers["location"] == f"/v1/decisions/{decision.id}"
    assert decision.verdict == models.Verdict.FUND
    assert decision.amdahl.k == 10.0  # `k` is `number | "inf" | Range`: the number must parse
    assert decision.amdahl.new_ms == 81.1
    replay = create.sync_detailed(client=client, body=models.Proposal.from_dict(ATTENTION), idempotency_key="a1")
    assert replay.status_code == 200
    assert isinstance(replay.parsed, models.Decision)
    assert replay.parsed.id == decision.id
    assert decision.source == models.DecisionSource.API
    # The client has no `source` to set: the server alone says a decision came from Slack. Sent anyway as an
    # extra property, it is refused, naming the field, and nothing is stored.
    assert "source" not in models.Proposal.__annotations__
    claimed = models.Proposal.from_dict(ATTENTION | {"source": "slack", "source_detail": {"user_id": "UFAKE"}})
    forged = create.sync_detailed(client=client, body=claimed)
    assert forged.status_code == 422
    assert isinstance(forged.parsed, models.Problem)
    assert "Unknown field `source" in forged.parsed.detail

    removed = _module(generated, f"{api}.decisions.evaluate_proposal").sync(
        client=client,
        body=models.Proposal.from_dict({"target": "h2d_copy", "p": 0.1, "k": "inf", "baseline_ms": 100}),
    )
    assert isinstance(removed, models.Evaluation)
    assert removed.amdahl.k == models.Infinite.INF

    reader = _module(generated, f"{api}.decisions.get_decision")
    read = reader.sync_detailed(decision_id=decision.id, client=client)
    assert isinstance(read.parsed, models.Decision)
    assert read.parsed.to_dict() == decision.to_dict()
    unchanged = reader.sync_detailed(decision_id=decision.id, client=client, if_none_match=read.headers["etag"])
    assert (unchanged.status_code, unchanged.parsed, unchanged.content) == (304, None, b"")

    lister = _module(generated, f"{api}.decisions.list_decisions")
    page = lister.sync(client=client, verdict=models.Verdict.FUND, limit=10)
    assert isinstance(page, models.DecisionPage)
    assert [item.id for item in page.items] == [decision.id]
    assert page.next_cursor is None
    other = create.sync(client=client, body=models.Proposal.from_dict(ATTENTION | {"team": "serving"}))
    assert isinstance(other, models.Decision)
    by_team = lister.sync(client=client, team="serving")
    assert isinstance(by_team, models.DecisionPage)
    assert [item.id for item in by_team.items] == [other.id]
    assert lister.sync(client=client, team="training").items == []
    # `since` is a date-time to the generated client, sent as RFC 3339
    since = lister.sync(client=client, since=decision.created_at)
    assert [item.id for item in since.items] == [other.id, decision.id]
    assert lister.sync(client=client, since=datetime(2999, 1, 1, tzinfo=UTC)).items == []

    outcome = _module(generated, f"{api}.outcomes.record_outcome").sync_detailed(
        decision_id=decision.id,
        client=client,
        body=models.OutcomeReport.from_dict(
            {"target_ms": 3.5, "scope": {"model": "llama-8b", "dtype": "bf16", "device": "MI300X"}}
        ),
    )
    assert outcome.status_code == 201, outcome.content
    assert isinstance(outcome.parsed, models.Outcome)
    assert outcome.parsed.realized.k == 6.0

    put = _module(generated, f"{api}.policies.put_policy")
    strict = put.sync(name="strict", client=client, body=models.PolicyKeys.from_dict({"noise_floor": 0.5}))
    assert isinstance(strict, models.Policy)
    assert (strict.name, strict.version, strict.noise_floor) == ("strict", 1, 0.5)
    toml = put.sync(name="strict", client=client, body=types.File(payload=b"noise_floor = 0.25\n"))
    assert isinstance(toml, models.Policy)
    assert (toml.version, toml.noise_floor) == (2, 0.25)

    again = _module(generated, f"{api}.decisions.reevaluate_decision").sync(
        decision_id=decision.id, client=client, policy="strict"
    )
    assert isinstance(again, models.Reevaluation)
    assert again.decision_id == decision.id
    assert again.after.policy.to_dict() == {"name": "strict", "version": 2}

    upload = _module(generated, f"{api}.profiles.upload_profile")
    raw = upload.sync_detailed(
        client=client, body=types.File(payload=(SEED / "kernel_trace.csv").read_bytes()), name="kernels"
    )
    assert raw.status_code == 201, raw.content
    assert isinstance(raw.parsed, models.ProfileDoc)
    assert raw.headers["location"] == f"/v1/profiles/{raw.parsed.id}"
    parts = [
        types.File(payload=(SEED / name).read_bytes(), file_name=name, mime_type="text/csv")
        for name in ("kernel_trace.csv", "memory_copy_trace.csv", "hip_api_stats.csv")
    ]
    multipart = upload.sync(client=client, body=models.UploadProfileFilesBody(files=parts), name="seed part 2")
    assert isinstance(multipart, models.ProfileDoc)
    assert multipart.breakdown.device_busy_ns == 3_606_501
    stored = _module(generated, f"{api}.profiles.get_profile").sync(profile_id=multipart.id, client=client)
    assert isinstance(stored, models.ProfileDoc)
    assert stored.to_dict() == multipart.to_dict()

    listed = _module(generated, f"{api}.profiles.list_profiles")
    first_page = listed.sync(client=client, limit=1)
    assert isinstance(first_page, models.ProfilePage)
    assert [(item.id, item.name, item.format_) for item in first_page.items] == [
        (multipart.id, "seed part 2", multipart.breakdown.format_)
    ]
    assert first_page.items[0].created_at == multipart.created_at
    rest = listed.sync(client=client, cursor=first_page.next_cursor)
    assert [item.id for item in rest.items] == [raw.parsed.id]
    assert rest.next_cursor is None
