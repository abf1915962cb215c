"""Parse an upload in a child process the server can measure and end: memory and time bounded by construction.

A reader's memory grows with what it holds (events, names), not with the bytes it was given: ten bytes of
`{"ph":"i"}` become a hundred-byte struct. Counting inside every reader is the first line (`rules/profiles/budget`);
this is the one that cannot be missed. The server starts `python -m worthit.service.profiles.worker` per upload,
writes it the files, and watches its resident set from /proc every few milliseconds: past `memory_limit` bytes the
child is killed and the upload answered 413 naming the limit; when the request is abandoned (its deadline passed,
the client left) it is killed too, so no parse runs on for nobody. The caller returns (and releases its turn) only
once the child has exited.

Why a process and not RLIMIT_AS in it: polars reserves hundreds of MB of address space it never touches (measured:
164 MB of address space for an 82 MB peak on a small kernel trace), so an address-space limit either kills
legitimate kernel traces or bounds nothing. The resident set is what the pod's cgroup counts.

Protocol (stdin → stdout, one job per process): an 8-byte big-endian length, a msgpack `Job`, then the files'
bytes back to back; the answer is one msgpack `Outcome`, then the child's peak resident set (VmHWM) in 8 bytes.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.profiles.errors import ProfileError, ProfileTooLarge
from worthit.rules.profiles.model import Breakdown
from worthit.service.errors import Unavailable

if TYPE_CHECKING:
    from worthit.rules.profiles.kineto import Schedule

log = logging.getLogger(__name__)

#: How often the server looks at the child's resident set: at the ~1 GB/s a parse can allocate, a few MB past it.
POLL_SECONDS = 0.005
#: The largest answer a child may write (a folded breakdown is a few hundred KB; the child refuses one larger than a
#: stored profile may be, so this only guards against a child gone wrong).
MAX_ANSWER_BYTES = 64 * 1024**2
#: The answer ends with the child's own peak resident set, in this many bytes (big-endian).
_PEAK_BYTES = 8
_PR_SET_PDEATHSIG = 1
#: The child's exit status when Python itself ran out of memory.
_OUT_OF_MEMORY = 75
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Job(msgspec.Struct, kw_only=True, frozen=True):
    """What the child parses: the upload's options, the files' sizes (their bytes follow) and the readers' limits."""

    format: str | None
    steps: str | None
    names: list[str] | None
    sizes: list[int]
    max_inflated_bytes: int
    max_events: int
    max_names: int
    max_stored_bytes: int
    max_schedule_ops: int = 0
    """Device ops of a trace past which its schedule is not stored (`WORTHIT_MAX_SCHEDULE_OPS`); 0: no schedules."""
    summaries: bool = False
    """The one file is a JSON array of rank summaries (`POST /v1/profiles/summaries`): decoded, checked against
    the summaries' caps and combined here, under this process's memory watch and its request's deadline."""


class Failure(msgspec.Struct, kw_only=True, frozen=True):
    """A ProfileError (ProfileTooLarge when `limit` is set, InvalidInput when `pointer` is), carried back field by
    field."""

    detail: str
    format_expected: str | None = None
    line: int | None = None
    limit: int | None = None
    pointer: str | None = None
    malformed: bool = False

    def error(self) -> ProfileError | InvalidInput | msgspec.DecodeError:
        if self.malformed:
            return msgspec.DecodeError(self.detail)
        if self.pointer is not None:
            return InvalidInput(self.detail, self.pointer)
        if self.limit is not None:
            return ProfileTooLarge(self.detail, limit=self.limit, format_expected=self.format_expected)
        return ProfileError(self.detail, format_expected=self.format_expected, line=self.line)


class StoredSchedule(msgspec.Struct, kw_only=True, frozen=True):
    """One trace's schedule as the store keeps it: its device ops' count and its encoding (`encode_schedule`)."""

    ops: int
    data: bytes


class Outcome(msgspec.Struct, kw_only=True, frozen=True):
    breakdown: Breakdown | None = None
    failure: Failure | None = None
    schedules: list[StoredSchedule] = msgspec.field(default_factory=list)
    """The schedule of each trace (one per rank, in the files' order), encoded for the store: what a what-if on the
    profile replays. Empty where the profile cannot be replayed (its breakdown's notes say why)."""


class Parsed(msgspec.Struct, kw_only=True, frozen=True):
    """What an upload's parse answers: the folded breakdown and the traces' encoded schedules (maybe none)."""

    breakdown: Breakdown
    schedules: list[StoredSchedule]


class Abandoned(Exception):
    """The request was abandoned while the child parsed: it was killed, and nobody waits for the result."""


def parse_in_child(
    files: Sequence[bytes],
    job: Job,
    *,
    memory_limit: int,
    abandoned: threading.Event,
) -> Parsed:
    """Parse `files` (their sizes are in `job`) in a child process of at most `memory_limit` resident bytes.

    Waits for the pod's turn (one parse at a time over the server's processes), then blocks until the child has
    exited: ProfileError/ProfileTooLarge as the readers raise them, ProfileTooLarge when
    the child passed `memory_limit`, Abandoned when `abandoned` was set meanwhile (the child is killed at once).
    """
    with _pod_turn(abandoned):
        return _parse_in_child(files, job, memory_limit, abandoned)


@contextmanager
def _pod_turn(abandoned: threading.Event) -> Iterator[None]:
    """One parse at a time over all of the server's processes (`WORTHIT_WORKERS` > 1 share one pod's memory): an
    exclusive lock on a file named by the process group, which the server's workers share and tests' servers do
    not. Closing the file (the process dying included) releases it."""
    path = os.path.join(tempfile.gettempdir(), f"worthit-profile-parse-{os.getpgrp()}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if abandoned.wait(0.05):
                    raise Abandoned from None
        yield
    finally:
        os.close(fd)


def _parse_in_child(files: Sequence[bytes], job: Job, memory_limit: int, abandoned: threading.Event) -> Parsed:
    header = msgspec.msgpack.encode(job)
    try:
        child = subprocess.Popen(  # noqa: S603 - our interpreter, our module, our pid: no input of a client
            [sys.executable, "-m", "worthit.service.profiles.worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
    except OSError as exc:  # out of processes, descriptors or memory for a fork: the server's state, not the file's
        raise Unavailable(f"The profile parse worker could not start ({exc.strerror}); retry shortly.") from exc
    if child.stdin is None or child.stdout is None:
        raise RuntimeError("the profile worker has no pipes")
    oom_kills_before = _oom_kills()
    writer = threading.Thread(target=_feed, args=(child.stdin, [len(header).to_bytes(8, "big"), header, *files]))
    writer.start()
    answer = bytearray()
    peak = 0
    reason: str | None = None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            fd = child.stdout.fileno()
            while True:
                rss = resident_bytes(child.pid)
                peak = max(peak, rss)
                if rss > memory_limit:
                    reason = "memory"
                elif abandoned.is_set():
                    reason = "abandoned"
                elif len(answer) > MAX_ANSWER_BYTES:
                    reason = "answer"
                if reason is not None:
                    peak = max(peak, _stopped_peak(child))
                    child.kill()
                    break
                if selector.select(POLL_SECONDS):
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    answer += chunk
    finally:
        # At EOF the child has written its answer and is exiting: it gets a moment, then is made sure of.
        _reap(child, 5 if reason is None else 0)
        writer.join()
        child.stdout.close()
    if reason is None and child.returncode == 0 and len(answer) >= _PEAK_BYTES:
        # The child's own high-water mark, read by itself once its answer was made: exact, unlike `peak`'s looks.
        peak = max(peak, int.from_bytes(answer[-_PEAK_BYTES:], "big"))
        del answer[-_PEAK_BYTES:]
    log.info("profile worker %s exited %s, peak resident %d bytes", child.pid, child.returncode, peak)
    if reason == "abandoned":
        raise Abandoned
    out_of_memory = (
        reason is None
        and child.returncode < 0
        and (
            # An allocator aborting (polars does on a failed allocation), or the kernel's OOM killer (the pod's limit
            # reached, the largest process chosen): the pod's memory counter says which kill was its own. Where it
            # cannot be read (cgroup v1, no /sys), a kill is taken as from outside: the answer says to send it again.
            child.returncode == -signal.SIGABRT or _oom_kills() != oom_kills_before
        )
    )
    if reason is None and child.returncode < 0 and not out_of_memory:
        # Killed by someone else (an operator, a supervisor): nothing to say about the file. Sending it again works.
        raise Unavailable(
            f"The parse stopped: its worker was killed by signal {-child.returncode} from outside the server, "
            "not for the file's size; send it again."
        )
    if reason == "memory" or out_of_memory:
        how = "" if reason == "memory" else f" (the worker was killed by signal {-child.returncode})"
        raise ProfileTooLarge(
            f"parsing it needs more memory than the limit of {memory_limit} bytes ({memory_limit // 1024**2} MiB) "
            f"(WORTHIT_MAX_PARSE_MEMORY_BYTES){how}; expected a profile a parse can hold in that: fewer events or "
            "names",
            limit=memory_limit,
            format_expected=job.format,
        )
    if reason == "answer":  # a breakdown of a few thousand phases whose names are hundreds of KB each
        raise ProfileTooLarge(
            f"its breakdown is larger than {MAX_ANSWER_BYTES} bytes ({MAX_ANSWER_BYTES // 1024**2} MiB); expected "
            "fewer or shorter phase names",
            limit=MAX_ANSWER_BYTES,
            format_expected=job.format,
        )
    if reason is None and child.returncode == _OUT_OF_MEMORY:
        raise ProfileTooLarge(
            f"parsing it needs more memory than the worker could allocate (WORTHIT_MAX_PARSE_MEMORY_BYTES is "
            f"{memory_limit} bytes); expected a profile a parse can hold in that: fewer events or names",
            limit=memory_limit,
            format_expected=job.format,
        )
    if reason is not None or child.returncode != 0:
        raise RuntimeError(f"the profile worker exited with {child.returncode} ({reason or 'no answer'})")
    outcome = msgspec.msgpack.decode(answer, type=Outcome)
    if outcome.failure is not None:
        raise outcome.failure.error()
    if outcome.breakdown is None:
        raise RuntimeError("the profile worker answered neither a breakdown nor a failure")
    return Parsed(breakdown=outcome.breakdown, schedules=outcome.schedules)


def _stopped_peak(child: subprocess.Popen[bytes]) -> int:
    """`child` stopped (SIGSTOP: it allocates nothing more), then its high-water resident set as the kernel counted
    it (VmHWM): the peak of a worker about to be killed, which the looks every `POLL_SECONDS` can miss."""
    child.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 0.1  # the stop is delivered asynchronously: look once it has taken effect
    while _state(child.pid) not in ("T", "t", "Z", "X", "") and time.monotonic() < deadline:
        time.sleep(0.001)
    return high_water_bytes(child.pid)


def _state(pid: int) -> str:
    """The process's state letter from /proc (`T` stopped, `Z` exited), "" once it has gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def high_water_bytes(pid: int) -> int:
    """The high-water resident set (VmHWM) of `pid` from /proc (0 where there is none, or once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return 0
    return 0


def _reap(child: subprocess.Popen[bytes], grace: float) -> None:
    """Wait up to `grace` seconds for `child` to exit, then kill it; wait for it and set its returncode."""
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _oom_kills() -> int | None:
    """How many processes the kernel's OOM killer has killed in this process's cgroup (v2), None where unknown."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as own:
            path = next(line.split(":", 2)[2].strip() for line in own if line.startswith("0::"))
        with open(f"/sys/fs/cgroup{path}/memory.events", encoding="ascii") as events:
            for line in events:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return None


def resident_bytes(pid: int) -> int:
    """The resident set of `pid` from /proc (0 where there is no /proc, or once it has gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _feed(pipe: IO[bytes], parts: Sequence[bytes]) -> None:
    try:
        for part in parts:
            pipe.write(part)
        pipe.close()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the child was killed (over its memory, abandoned) before it read everything


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise SystemExit(f"profile worker: expected {size} bytes on stdin, got {len(data)}")
    return data


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this child when the server dies (a SIGKILL, an OOM kill): no one would watch its memory."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # not Linux: the parse ends on its own, unwatched
    if os.getppid() != parent:  # the server died before the request above took effect
        os._exit(1)


def main() -> None:
    """The child: read one job from stdin, parse it (or combine its summaries), write its outcome to stdout, exit."""
    from worthit.rules.profiles.budget import Budget, counting
    from worthit.rules.profiles.fold import fold_breakdown
    from worthit.service.profiles.parsing import combine_summary_array, parse_with_schedules

    _die_with_parent(int(sys.argv[1]))
    stdin = sys.stdin.buffer
    # The answer gets the pipe to itself: anything a library prints goes to stderr (the server's log) instead.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    size = int.from_bytes(_read_exactly(stdin, 8), "big")
    job = msgspec.msgpack.decode(_read_exactly(stdin, size), type=Job)
    files = [_read_exactly(stdin, n) for n in job.sizes]
    try:
        schedules: list[StoredSchedule] = []
        if job.summaries:
            with counting(Budget(max_events=job.max_events, max_names=job.max_names)):
                breakdown = combine_summary_array(files[0])
        else:
            breakdown, read, note = parse_with_schedules(
                files,
                job.format,
                job.steps,
                job.names,
                max_inflated_bytes=job.max_inflated_bytes,
                max_events=job.max_events,
                max_names=job.max_names,
                max_ops=job.max_schedule_ops,
            )
            del files
            schedules, note = _stored(read, note)
            if note is not None:
                breakdown = msgspec.structs.replace(breakdown, notes=[*breakdown.notes, note])
        # Stored bounded: a 50,000-kernel trace must not make every decision citing it megabytes.
        folded = fold_breakdown(breakdown)
        stored = len(msgspec.json.encode(folded))
        if stored > job.max_stored_bytes:  # every read of it loads this much: refused here, before it is stored
            raise ProfileTooLarge(
                f"its breakdown is {stored} bytes of JSON, more than a stored profile may hold "
                f"({job.max_stored_bytes} bytes, WORTHIT_MAX_STORED_PROFILE_BYTES); expected fewer steps "
                "(`steps`), ranks or phases",
                limit=job.max_stored_bytes,
                format_expected=job.format,
            )
        outcome = Outcome(breakdown=folded, schedules=schedules)
    except ProfileTooLarge as exc:
        outcome = Outcome(failure=Failure(detail=exc.detail, format_expected=exc.format_expected, limit=exc.limit))
    except ProfileError as exc:
        outcome = Outcome(failure=Failure(detail=exc.detail, format_expected=exc.format_expected, line=exc.line))
    except InvalidInput as exc:
        outcome = Outcome(failure=Failure(detail=exc.detail, pointer=exc.pointer))
    except msgspec.DecodeError as exc:
        outcome = Outcome(failure=Failure(detail=str(exc), malformed=True))
    except MemoryError:
        os._exit(_OUT_OF_MEMORY)  # nothing can be built to say so; the server names its limit
    answer = msgspec.msgpack.encode(outcome)
    stdout.write(answer + high_water_bytes(os.getpid()).to_bytes(_PEAK_BYTES, "big"))
    stdout.flush()


#: What the schedules of one answer may take together: the answer's limit less room for the breakdown beside them.
MAX_SCHEDULE_BYTES = MAX_ANSWER_BYTES // 2


def _stored(schedules: list[Schedule] | None, note: str | None) -> tuple[list[StoredSchedule], str | None]:
    """The schedules encoded for the store, one at a time (each dropped once encoded); none, with a note saying why,
    when together they pass `MAX_SCHEDULE_BYTES`."""
    from worthit.rules.profiles.kineto import encode_schedule

    out: list[StoredSchedule] = []
    total = 0
    while schedules:
        schedule = schedules.pop(0)
        data = encode_schedule(schedule)
        total += len(data)
        if total > MAX_SCHEDULE_BYTES:
            return [], (
                f"A what-if cannot replay this profile from the store: its schedules take more than "
                f"{MAX_SCHEDULE_BYTES:,} bytes encoded; `worthit profile TRACE --what-if` replays the trace itself."
            )
        out.append(StoredSchedule(ops=len(schedule.op_start), data=data))
    return out, note


if __name__ == "__main__":
    main()
