"""Bad files: each gives a ProfileError naming the expected format, the problem and the line."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest

from worthit.rules.profiles import PhaseNotFoundError, ProfileError, find_phase, read_any
from worthit.rules.profiles.model import Breakdown, Phase

KERNEL_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size","Workgroup_Size_X",'
    '"Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)
GOOD_ROW = '"KERNEL_DISPATCH",1,1,69,1,16,"k(float*, int)",1451,1000,2000,0,0,64,1,1,1024,1024,1'


def kernel_trace(*rows: str) -> bytes:
    return ("\n".join([KERNEL_HEADER, *rows]) + "\n").encode()


def read_error(data: bytes, fmt: str | None = None) -> ProfileError:
    with pytest.raises(ProfileError) as caught:
        read_any(data, fmt)
    err = caught.value
    assert isinstance(err, ValueError)  # the service maps domain ValueErrors to 4xx
    return err


def test_empty() -> None:
    """Empty and whitespace-only files say so."""
    for data in (b"", b"  \n\n"):
        assert "empty" in str(read_error(data))


def test_binary() -> None:
    """Binary input is refused as binary, also when a text format is forced."""
    blob = bytes(range(256)) * 4
    assert "binary" in str(read_error(blob))
    err = read_error(blob, "rocprofv3_kernel_trace")
    assert err.format_expected == "rocprofv3_kernel_trace"
    assert "binary" in err.detail


def test_unknown_format_lists_what_is_expected() -> None:
    """A CSV no reader knows: the message says what was expected and quotes the start of the file."""
    err = read_error(b"a,b,c\n1,2,3\n")
    assert err.format_expected is None
    assert "rocprofv3" in err.detail
    assert "nsys" in err.detail
    assert "PyTorch" in err.detail
    assert "'a,b,c'" in err.detail


def test_wrong_header_for_forced_format() -> None:
    """Forcing a format whose header is absent names the expected columns and the first line."""
    err = read_error(b'"Name","Calls","TotalDurationNs","Percentage"\n"k",1,5,100\n', "rocprofv3_kernel_trace")
    assert err.format_expected == "rocprofv3_kernel_trace"
    assert err.line == 1
    assert "Kernel_Name" in err.detail
    assert "Start_Timestamp" in err.detail


def test_unknown_forced_format() -> None:
    """A format name that does not exist lists the ones that do."""
    assert "rocprofv3_kernel_trace" in read_error(b"x", "excel").detail


def test_end_before_start() -> None:
    """A row ending before it starts: the first offending line is named."""
    bad = GOOD_ROW.replace(",1000,2000,", ",3000,2000,")
    err = read_error(kernel_trace(GOOD_ROW, GOOD_ROW, bad, bad))
    assert err.line == 4
    assert "End_Timestamp 2000 is before Start_Timestamp 3000" in err.detail
    assert "line 4" in str(err)
    assert "rocprofv3_kernel_trace" in str(err)


def test_non_numeric_timestamp() -> None:
    """A non-numeric field names its column and line."""
    err = read_error(kernel_trace(GOOD_ROW, GOOD_ROW.replace(",2000,", ",soon,")))
    assert err.line == 3
    assert "End_Timestamp" in err.detail
    assert "'soon'" in err.detail


def test_truncated_csv_row() -> None:
    """A file cut mid-row reports the short row as truncated."""
    data = kernel_trace(GOOD_ROW, GOOD_ROW)[:-30]
    err = read_error(data)
    assert err.line == 3
    assert "truncated" in err.detail


def test_header_without_rows() -> None:
    """A header alone is not a trace."""
    assert "no rows" in read_error(kernel_trace()).detail


def test_json_that_is_not_a_trace() -> None:
    """JSON without traceEvents, or with events of the wrong shape, is not a trace."""
    err = read_error(b'{"model": "resnet", "epochs": 3}')
    assert err.format_expected == "pytorch_trace"
    assert "traceEvents" in err.detail
    err = read_error(b'{"traceEvents": [{"ph": "X", "ts": "noon", "dur": 1}]}')
    assert "traceEvents[0].ts" in err.detail
    assert "complete" in read_error(b'{"traceEvents": [{"ph": "M", "name": "process_name"}]}').detail


def test_malformed_json_names_the_line() -> None:
    """Broken JSON: the line of the first bad byte."""
    err = read_error(b'{"traceEvents": [\n{"ph": "X", "ts": 1, "dur": 2},\n{"ph": "X", "ts": 1 "dur": 2}\n]}')
    assert err.line == 3
    assert "malformed JSON" in err.detail


def test_negative_duration_in_trace() -> None:
    """A complete event with a negative duration ends before it starts."""
    err = read_error(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": -1}]}')
    assert "ends before it starts" in err.detail


@pytest.mark.parametrize(("ts", "dur"), [("1e308", "5"), ("5", "1e308"), ("-1e300", "5"), (str(10**30), "5")])
def test_a_timestamp_no_clock_reaches_in_a_trace_is_refused(ts: str, dur: str) -> None:
    """1e308 µs would be an infinite number of ns: refused, naming the event, not an OverflowError."""
    err = read_error(
        f'{{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "k", "ts": {ts}, "dur": {dur}}}]}}'.encode()
    )
    assert "$.traceEvents[0]" in err.detail
    assert "outside what a profiler clock records" in err.detail


@pytest.mark.parametrize(
    ("first", "second", "days"),
    [
        ('-1e15, "dur": 10', '0, "dur": 1e15', 23_148),  # two events 2e15 µs apart: 2e15 / 86.4e9 days
        ('1.7e15, "dur": 10', '5, "dur": 10', 19_676),  # an epoch clock beside a relative one
        ('0, "dur": 604800000001', '0, "dur": 1', 7),  # one event a microsecond past a week
    ],
)
def test_events_farther_apart_than_a_profiler_records_are_refused(first: str, second: str, days: int) -> None:
    """A trace spanning more than a week (MAX_SPAN_NS) is two clocks or forged: refused, saying how long it spans."""
    events = ", ".join(
        f'{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": {when}}}' for when in (first, second)
    )
    err = read_error(f'{{"traceEvents": [{events}]}}'.encode())
    assert f"the events span {days:,} days" in err.detail
    assert "under 7 days" in err.detail


def test_a_trace_of_only_the_profilers_own_span_is_refused_as_before() -> None:
    """The span is checked only where something was recorded: the profiler's own span alone says no events."""
    err = read_error(b'{"traceEvents": [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "ts": 1, "dur": 5}]}')
    assert "no events" in err.detail


def test_a_trace_of_just_under_a_week_is_read() -> None:
    event = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 0, "dur": 604800000000}'
    data = b'{"traceEvents": [' + event + b"]}"
    assert read_any(data).wall_ns == 604_800_000_000_000


@pytest.mark.parametrize("end", [str(2**63), "9" * 25])
def test_a_timestamp_past_64_bits_in_a_kernel_trace_is_refused_by_line(end: str) -> None:
    """Past 2**63 ns the interval cannot be kept: the line is named, not an OverflowError."""
    err = read_error(kernel_trace(GOOD_ROW, GOOD_ROW.replace(",2000,", f",{end},")))
    assert err.line == 3
    assert "do not fit a 64-bit nanosecond clock" in err.detail


def test_truncated_gzip(fixture_bytes: Callable[[str], bytes]) -> None:
    """A gzip stream cut short is reported as truncated, not as a zlib or EOF error."""
    packed = fixture_bytes("torch_trace_mi250_kineto.json.gz")
    err = read_error(packed[: len(packed) // 2], "pytorch_trace")
    assert "truncated" in err.detail
    err = read_error(gzip.compress(kernel_trace(GOOD_ROW))[:-12])
    assert "truncated" in err.detail or "corrupt" in err.detail


def test_not_utf8_mid_file() -> None:
    """Undecodable bytes after a good header: a ProfileError at that line, not a UnicodeDecodeError."""
    err = read_error(kernel_trace(GOOD_ROW) + b'"KERNEL_DISPATCH",1,1,69,1,16,"\xff\xfe",1,1,2,0,0,64,1,1,1,1,1\n')
    assert "UTF-8" in err.detail


def test_find_phase_errors() -> None:
    """Unknown names list the largest phases; ambiguous patterns list their matches (up to ten)."""
    phases = [
        Phase(name=f"gemm_{i}", kind="kernel", total_ns=100 - i, calls=1, share_of_device=None, share_of_wall=None)
        for i in range(12)
    ] + [Phase(name="softmax_fwd", kind="kernel", total_ns=1, calls=1, share_of_device=None, share_of_wall=None)]
    b = Breakdown(format="t", wall_ns=None, device_busy_ns=None, phases=phases, inclusive=False)
    assert find_phase(b, "SOFTMAX").name == "softmax_fwd"
    assert find_phase(b, "gemm_1").name == "gemm_1"  # exact beats the substring matches gemm_10, gemm_11
    assert find_phase(b, "*_11").name == "gemm_11"
    with pytest.raises(PhaseNotFoundError) as caught:
        find_phase(b, "gemm")
    assert caught.value.ambiguous
    assert len(caught.value.candidates) == 10
    assert caught.value.candidates[0] == "gemm_0"  # largest first
    with pytest.raises(PhaseNotFoundError) as caught:
        find_phase(b, "attention")
    assert not caught.value.ambiguous
    assert "gemm_0" in str(caught.value)


@pytest.mark.parametrize(
    ("total", "expected"),
    [("-1", "a non-negative number"), ("1e308", "a number below 2^63"), (str(2**63), "a number below 2^63")],
)
def test_a_total_no_run_records_in_a_summary_is_refused_by_column_and_line(total: str, expected: str) -> None:
    """A summed total below zero would print a negative share of device time, and one of 1e308 ns overflows the
    float its share is: refused, naming the column."""
    data = (
        b"Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        b"60.0,600,2,300,300,300,300,0,gemm\n"
        b"40.0," + total.encode() + b",2,200,200,200,200,0,softmax\n"
    )
    err = read_error(data)
    assert err.line == 3
    assert f"expected {expected}" in err.detail
    assert f"in column Total Time (ns), got '{total}'" in err.detail
