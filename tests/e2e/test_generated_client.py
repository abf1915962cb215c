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
    """Create (201, then the 200 of a replay), read, list, outcome, policy PUT (JSON and TOML), re-evaluate and
    profile upload (raw and multipart), each parsed into the generated models, on a server that requires tokens."""
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

    create = _module(generated, f"{api}.decisions.v1_decisions_create")
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

    removed = _module(generated, f"{api}.decisions.v1_evaluate_evaluate").sync(
        client=client,
        body=models.Proposal.from_dict({"target": "h2d_copy", "p": 0.1, "k": "inf", "baseline_ms": 100}),
    )
    assert isinstance(removed, models.Evaluation)
    assert removed.amdahl.k == models.Infinite.INF

    reader = _module(generated, f"{api}.decisions.v1_decisions_decision_id_read")
    read = reader.sync_detailed(decision_id=decision.id, client=client)
    assert isinstance(read.parsed, models.Decision)
    assert read.parsed.to_dict() == decision.to_dict()
    unchanged = reader.sync_detailed(decision_id=decision.id, client=client, if_none_match=read.headers["etag"])
    assert (unchanged.status_code, unchanged.parsed, unchanged.content) == (304, None, b"")

    page = _module(generated, f"{api}.decisions.v1_decisions_list_decisions").sync(
        client=client, verdict=models.Verdict.FUND, limit=10
    )
    assert isinstance(page, models.DecisionPage)
    assert [item.id for item in page.items] == [decision.id]
    assert page.next_cursor is None

    outcome = _module(generated, f"{api}.outcomes.v1_decisions_decision_id_outcome_record").sync_detailed(
        decision_id=decision.id,
        client=client,
        body=models.OutcomeReport.from_dict(
            {"target_ms": 3.5, "scope": {"model": "llama-8b", "dtype": "bf16", "device": "MI300X"}}
        ),
    )
    assert outcome.status_code == 201, outcome.content
    assert isinstance(outcome.parsed, models.Outcome)
    assert outcome.parsed.realized.k == 6.0

    put = _module(generated, f"{api}.policies.v1_policies_name_put_policy")
    strict = put.sync(name="strict", client=client, body=models.PolicyKeys.from_dict({"noise_floor": 0.5}))
    assert isinstance(strict, models.Policy)
    assert (strict.name, strict.version, strict.noise_floor) == ("strict", 1, 0.5)
    toml = put.sync(name="strict", client=client, body=types.File(payload=b"noise_floor = 0.25\n"))
    assert isinstance(toml, models.Policy)
    assert (toml.version, toml.noise_floor) == (2, 0.25)

    again = _module(generated, f"{api}.policies.v1_decisions_decision_id_reevaluate_reevaluate").sync(
        decision_id=decision.id, client=client, policy="strict"
    )
    assert isinstance(again, models.Reevaluation)
    assert again.decision_id == decision.id
    assert again.after.policy.to_dict() == {"name": "strict", "version": 2}

    upload = _module(generated, f"{api}.profiles.v1_profiles_upload")
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
    multipart = upload.sync(client=client, body=models.V1ProfilesUploadFilesBody(files=parts), name="seed part 2")
    assert isinstance(multipart, models.ProfileDoc)
    assert multipart.breakdown.device_busy_ns == 3_606_501
    stored = _module(generated, f"{api}.profiles.v1_profiles_profile_id_read").sync(
        profile_id=multipart.id, client=client
    )
    assert isinstance(stored, models.ProfileDoc)
    assert stored.to_dict() == multipart.to_dict()
