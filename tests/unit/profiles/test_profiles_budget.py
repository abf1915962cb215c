"""Memory in the engine: every gzip layer inflated from one allowance, and readers that count what they
hold (events, distinct names) against one budget per parse, with the limit named when they stop."""

from __future__ import annotations

import gzip

import pytest

from tests import attacks
from worthit.rules.profiles import read_any
from worthit.rules.profiles.budget import Budget, counting
from worthit.rules.profiles.compression import MAX_LAYERS, gunzip, inflate
from worthit.rules.profiles.errors import ProfileError, ProfileTooLarge
from worthit.service.profiles.parsing import parse

MIB = 1024**2


def test_inflate_peels_every_layer() -> None:
    plain = b'{"traceEvents": []}'
    assert inflate(attacks.nested(plain, 3)) == plain
    assert inflate(plain) is plain
    assert gunzip(attacks.nested(plain, 2)) == plain  # the older name is the same function


def test_a_gzip_inside_a_gzip_is_held_to_the_one_limit() -> None:
    """The outer layer is 8 KB, the inner one 8 MiB: refused under a 4 MiB limit (before, only the outer counted)."""
    bomb = attacks.nested(attacks.spaces_gzip(8 * MIB))
    assert len(gzip.decompress(bomb)) < 64 * 1024
    with pytest.raises(ProfileTooLarge, match=f"the limit of {4 * MIB} bytes") as caught:
        inflate(bomb, limit=4 * MIB)
    assert caught.value.limit == 4 * MIB


def test_gzip_nested_too_deep_is_refused() -> None:
    with pytest.raises(ProfileError, match=f"more than {MAX_LAYERS} layers"):
        inflate(attacks.nested(b"x", MAX_LAYERS + 1))


def test_the_files_of_one_upload_share_one_allowance() -> None:
    """Two files inflating to 3 MiB each, every layer: each passes a 5 MiB limit alone, the two together do not."""
    one = attacks.nested(attacks.spaces_gzip(3 * MIB))
    with pytest.raises(ProfileError, match="malformed JSON"):
        parse([one], max_inflated_bytes=5 * MIB)
    with pytest.raises(ProfileTooLarge, match="inflates beyond the limit"):
        parse([one, one], max_inflated_bytes=5 * MIB)


def copy_trace(rows: int) -> bytes:
    lines = ["Direction,Start_Timestamp,End_Timestamp"] + [f"HOST_TO_DEVICE,{i},{i + 1}" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def api_trace(names: int) -> bytes:
    lines = ["Domain,Function,Start_Timestamp,End_Timestamp"] + [
        f"HIP_API,hipCall{i},{i},{i + 1}" for i in range(names)
    ]
    return ("\n".join(lines) + "\n").encode()


def test_csv_rows_are_counted_against_the_event_limit() -> None:
    data = copy_trace(20_000)
    with counting(Budget(max_events=10_000)), pytest.raises(ProfileTooLarge) as caught:
        read_any(data)
    assert "limit of 10,000 events" in str(caught.value)
    assert "WORTHIT_MAX_PROFILE_EVENTS" in str(caught.value)
    assert read_any(data).activity is not None  # outside a budget, read as always


def test_distinct_names_are_counted_by_the_streaming_and_the_columnar_readers() -> None:
    for data in (api_trace(300), attacks.distinct_kernels_csv(300)):
        with counting(Budget(max_names=100)), pytest.raises(ProfileTooLarge) as caught:
            read_any(data)
        assert "limit of 100 distinct phases" in str(caught.value)
        assert "WORTHIT_MAX_PROFILE_NAMES" in str(caught.value)
        assert len(read_any(data).phases) == 300


def test_a_json_trace_is_counted_before_it_is_decoded() -> None:
    """Ten-byte events: the objects are counted in the bytes, so the structs are never built."""
    trace = attacks.tiny_events(1 * MIB)
    with counting(Budget(max_events=50_000)), pytest.raises(ProfileTooLarge, match="limit of 50,000 events"):
        parse([trace])
    gzipped = attacks.tiny_events_gzip(1 * MIB)
    with counting(Budget(max_events=50_000)), pytest.raises(ProfileTooLarge, match="limit of 50,000 events"):
        parse([gzipped])


def test_one_budget_covers_every_file_of_a_parse() -> None:
    part = copy_trace(6_000)
    with counting(Budget(max_events=10_000)):
        read_any(part)  # 6,000 rows fit
    with counting(Budget(max_events=10_000)), pytest.raises(ProfileTooLarge, match="10,000 events"):
        parse([part, part])
