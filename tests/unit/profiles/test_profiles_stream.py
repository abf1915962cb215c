"""The streaming Kineto reader: the same columns as the whole-document reader, whatever the cuts, the chunks and
the strings inside events; gzip inflated as it comes; errors that still say what and where."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kineto_traces import Shape, write
from worthit.rules.profiles.detect import detect
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.parse import parse_trace
from worthit.rules.profiles.kineto.stream import parse_stream, reduce_batch

REAL = [
    "trace_filter_sampled_rank-0.json.gz",
    "trace_filter_sampled_rank-1.json.gz",
    "nccl_parser_config_nccl_data.json.gz",
    "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
]


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at : at + size]


def generated(shape: Shape | None = None) -> bytes:
    out = io.StringIO()
    write(out, shape or Shape(steps=5, layers=3))
    return out.getvalue().encode()


@pytest.mark.parametrize("name", REAL)
def test_real_traces_stream_to_the_same_columns(fixture_bytes: Callable[[str], bytes], name: str) -> None:
    data = fixture_bytes(f"real/pytorch/{name}")
    whole = parse_trace(data)
    for batch, chunk in ((2048, 777), (1 << 16, 1 << 16), (1 << 22, 1 << 20)):
        assert parse_stream(pieces(data, chunk), batch=batch) == whole, (batch, chunk)


def test_a_sized_training_trace_keeps_its_few_steps_and_streams_to_the_same_columns() -> None:
    """`write(..., megabytes=2)` of a training shape (the benchmarks' input) holds its five long steps, comes within
    5% of 2 MB, numbers every CPU op once by Ev Idx, and streams to what the whole-document reader finds."""
    out = io.StringIO()
    shape = Shape(steps=5, first_step=5, training=True, id_base=50_000, correlation_stride=5)
    layers = write(out, shape, megabytes=2)
    data = out.getvalue().encode()
    assert layers > 50
    assert abs(len(data) - 2e6) < 1e5
    events = json.loads(data)["traceEvents"]
    indices = [e["args"]["Ev Idx"] for e in events if e.get("cat") in ("cpu_op", "user_annotation")]
    assert sorted(indices) == list(range(len(indices)))
    assert min(e["args"]["correlation"] for e in events if e.get("cat") == "kernel") > 50_000
    whole = parse_trace(data)
    assert len(whole.steps) == 5
    assert parse_stream(pieces(data, 1 << 16), batch=4096) == whole


def test_generated_trace_plain_and_gzip() -> None:
    data = generated()
    whole = parse_trace(data)
    assert whole.rank == 0
    assert len(whole.steps) == 5
    assert parse_stream(pieces(data, 1000), batch=3000) == whole
    assert parse_stream(pieces(gzip.compress(data), 333), batch=3000) == whole
    # Two gzip members, as `cat a.gz b.gz` makes, inflate as one stream.
    half = len(data) // 2
    assert parse_stream([gzip.compress(data[:half]) + gzip.compress(data[half:])], batch=5000) == whole


@pytest.mark.parametrize("chunk", [1, 2, 3, 1000])
def test_a_byte_order_mark_before_the_json_is_read_past(chunk: int) -> None:
    """Windows tools write a UTF-8 BOM before the JSON: detected as a PyTorch trace, and both readers find the same
    columns as without it, plain and gzipped, however the first bytes are cut."""
    data = generated()
    whole = parse_trace(data)
    marked = b"\xef\xbb\xbf" + data
    assert detect(marked) == detect(gzip.compress(marked)) == "pytorch_trace"
    assert parse_trace(marked) == parse_trace(gzip.compress(marked)) == whole
    assert parse_stream(pieces(marked, chunk), batch=3000) == whole
    assert parse_stream(pieces(gzip.compress(marked), chunk), batch=3000) == whole


_AWKWARD = st.text(alphabet='{}[],:"\\ \n\tab\u00e9', max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(_AWKWARD, min_size=1, max_size=30),
    batch=st.integers(min_value=1, max_value=400),
    chunk=st.integers(min_value=1, max_value=300),
    top_level_array=st.booleans(),
    pretty=st.booleans(),
)
def test_strings_with_brackets_and_quotes_never_cut_an_event(
    names: list[str], batch: int, chunk: int, top_level_array: bool, pretty: bool
) -> None:
    events = []
    for i, name in enumerate(names):
        cat = ("kernel", "cpu_op", "cuda_runtime", "user_annotation")[i % 4]
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 1,
                "tid": name or 2,
                "ts": 1000 + 10 * i,
                "dur": 5 + i % 3,
                "args": {"correlation": i // 2, "Concrete Inputs": [name, "}, {", '"]'], "nested": [{"a": [name]}]},
            }
        )
        events.append({"ph": "f", "id": i, "name": name, "cat": "ac2g", "ts": 1000 + 10 * i})
    doc: object = (
        events
        if top_level_array
        else {
            "meta": {"x": "traceEvents"},
            "traceEvents": events,
            "distributedInfo": {"rank": 3, "world_size": 4},
            "after": [{}],
        }
    )
    data = json.dumps(doc, indent=2 if pretty else None).encode()
    assert parse_stream(pieces(data, chunk), batch=batch) == parse_trace(data)


def test_an_empty_event_list_is_refused_as_the_whole_reader_refuses_it() -> None:
    for data in (b'{"traceEvents": []}', b"[]", b'{"traceEvents": [ ]}'):
        with pytest.raises(ProfileError, match="without complete"):
            parse_stream([data])


def test_errors_name_the_event_and_the_line() -> None:
    data = generated(Shape(steps=2, layers=2))
    lines = data.split(b"\n")
    broken = b"\n".join([*lines[:30], lines[30].replace(b'"ph": "X",', b'"ph": "X",,', 1), *lines[31:]])
    with pytest.raises(ProfileError) as whole:
        parse_trace(broken)
    assert whole.value.line == 31
    for batch in (300, 2000, 1 << 20):
        with pytest.raises(ProfileError) as caught:
            parse_stream(pieces(broken, 500), batch=batch)
        assert caught.value.line == 31, batch
    assert "malformed JSON" in str(caught.value)
    typed = data.replace(b'"dur": 3.000', b'"dur": "3"', 1)
    index = json.loads(data)["traceEvents"].index(
        next(e for e in json.loads(data)["traceEvents"] if e.get("dur") == 3.0)
    )
    with pytest.raises(ProfileError, match=rf"\$\.traceEvents\[{index}\]\.dur"):
        parse_stream(pieces(typed, 700), batch=1000)
    with pytest.raises(ProfileError, match="not closed"):
        parse_stream([data[: len(data) // 2]])
    with pytest.raises(ProfileError, match="truncated"):
        parse_stream([gzip.compress(data)[:-20]])
    with pytest.raises(ProfileError, match="not a Chrome trace"):
        parse_stream([b'{"schemaVersion": 1}'])


def test_batches_reduced_elsewhere_merge_to_the_same_columns(fixture_bytes: Callable[[str], bytes]) -> None:
    data = fixture_bytes("real/pytorch/nccl_parser_config_nccl_data.json.gz")
    whole = parse_trace(data)
    with ProcessPoolExecutor(2) as pool:
        assert (
            parse_stream(pieces(data, 1 << 16), batch=1 << 16, submit=lambda b: pool.submit(reduce_batch, b)) == whole
        )
    # Cuts inside strings (names full of "}, {") fail to decode and send the rest through the reader itself.
    events = [
        {
            "ph": "X",
            "cat": ("kernel", "cpu_op")[i % 2],
            "name": "}, {" * (i % 40),
            "tid": i % 3,
            "ts": i,
            "dur": 2,
            "args": {"correlation": i},
        }
        for i in range(2000)
    ]
    tricky = json.dumps({"traceEvents": events}).encode()
    with ThreadPoolExecutor(2) as threads:
        for batch in (500, 4000, 20000):
            merged = parse_stream(pieces(tricky, 3000), batch=batch, submit=lambda b: threads.submit(reduce_batch, b))
            assert merged == parse_trace(tricky), batch
        broken = tricky.replace(b'"ts": 1500,', b'"ts": "x",', 1)
        with pytest.raises(ProfileError, match=r"\$\.traceEvents\[1500\]\.ts"):
            parse_stream([broken], batch=5000, submit=lambda b: threads.submit(reduce_batch, b))
