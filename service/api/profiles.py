"""`/v1/profiles`: upload profiler output, get back the time breakdown with honest denominators."""

from __future__ import annotations

from typing import Annotated, Any, cast

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.exceptions import ClientException
from litestar.params import FromPath, JSONBody, QueryParameter

from worthit.rules.model import TEXT_PATTERN
from worthit.rules.profiles import FORMATS
from worthit.rules.profiles.kineto import RankSummary, WhatIf
from worthit.rules.step_grammar import STEPS_MAX_LENGTH, STEPS_PATTERN
from worthit.service.api.decisions import CURSOR_PATTERN
from worthit.service.http.caching import REVALIDATE, IfNoneMatch, tagged_json
from worthit.service.http.codec import RawJSON, StrictJSON
from worthit.service.http.problems import BODY_PROBLEMS, problem_responses
from worthit.service.profiles.schemas import ProfileDoc, ProfilePage, WhatIfRequest
from worthit.service.profiles.service import ProfileService

__all__ = ["ProfileController", "SummariesController"]


class ProfileController(Controller):
    path = "/v1/profiles"
    tags = ("profiles",)

    @post(
        "/",
        opt={"scope": "write"},
        status_code=201,
        responses=problem_responses(413, 415, 422),
    )
    async def upload(
        self,
        request: Request[Any, Any, Any],
        profiles: NamedDependency[ProfileService],
        format: Annotated[
            str | None,
            QueryParameter(description="Force a format instead of detecting it.", enum=list(FORMATS)),
        ] = None,
        name: Annotated[
            str | None, QueryParameter(max_length=200, pattern=TEXT_PATTERN, description="A label, e.g. the file name.")
        ] = None,
        steps: Annotated[
            str | None,
            QueryParameter(
                max_length=STEPS_MAX_LENGTH,
                pattern=STEPS_PATTERN,
                description="Steps of a PyTorch trace by ProfilerStep#N number: `2:5`, `3`, `2:`, `:5` or `all` "
                "(default: all but the last, incomplete step).",
            ),
        ] = None,
    ) -> Response[ProfileDoc]:
        """Upload profiler output: one file as the raw body (any content type but multipart), or several files of
        one run (a kernel trace, its memory-copy trace, its API stats; the PyTorch traces of a distributed run's ranks,
        or their rank summaries — see `POST /v1/profiles/summaries` for the format) as `multipart/form-data`. Answers
        201 with the breakdown; a proposal can then name `profile_id` and `target` instead of `p`."""
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        files: list[bytes] = []
        names: list[str] = []
        if media == "multipart/form-data":
            form = await request.form()
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    files.append(await value.read())
                    names.append(value.filename or key)
        else:
            files.append(await request.body())
        if not files or not any(files):
            raise ClientException("Expected profiler output in the request body, got an empty body")
        doc = await profiles.create(files, format=format, name=name, steps=steps, names=names or None)
        return Response(doc, status_code=201, headers={"Location": f"/v1/profiles/{doc.id}"})

    @get("/", opt={"scope": "read"}, responses=problem_responses(), cache_control=REVALIDATE)
    async def list_profiles(
        self,
        profiles: NamedDependency[ProfileService],
        cursor: Annotated[
            str | None,
            QueryParameter(max_length=64, pattern=CURSOR_PATTERN, description="`next_cursor` of the last page."),
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=200)] = 50,
    ) -> ProfilePage:
        """Stored profiles, newest first, each without its breakdown (`GET /v1/profiles/{id}` has it); follow
        `next_cursor` for the next page.

        Worst case: a page of 200 rows of five short columns (a few tens of kilobytes); no document is read."""
        return await profiles.page(cursor, limit)

    @get("/{profile_id:str}", opt={"scope": "read"}, responses=problem_responses(404))
    async def read(
        self, profile_id: FromPath[str], profiles: NamedDependency[ProfileService], if_none_match: IfNoneMatch = None
    ) -> Response[ProfileDoc]:
        """One stored profile's breakdown, with its `ETag` (`If-None-Match` with it answers 304).

        Worst case: the stored document (names cut to 16,384 characters, 1,024 phases at most; the parse worker's
        answer is 64 MiB at most) is held as the database's text and the body's bytes; it is never decoded."""
        # The documented type is the stored document's: it is served as stored, without decoding it.
        return cast("Response[ProfileDoc]", tagged_json(await profiles.document(profile_id), if_none_match))

    @post(
        "/{profile_id:str}/what-if",
        dto=StrictJSON[WhatIfRequest],
        return_dto=None,
        status_code=200,
        opt={"scope": "read"},
        responses=problem_responses(*BODY_PROBLEMS, 404),
    )
    async def what_if(
        self, profile_id: FromPath[str], data: JSONBody[WhatIfRequest], profiles: NamedDependency[ProfileService]
    ) -> WhatIf:
        """Replay the stored profile's traces (PyTorch traces with a device timeline, one per rank) with each
        target's device ops k times faster: the measured, replayed, predicted and Amdahl step times (per-step means
        over the window, and every step), where Amdahl's saving went (`lost_ns`: overlap, launch, sync, ranks) and
        notes. The same object as `worthit profile TRACE --what-if PATTERN=K --json` prints under `what_if`.

        404 for an unknown profile; 422 naming the field for a profile stored without a schedule (another format, or
        a trace of more device ops than `WORTHIT_MAX_SCHEDULE_OPS`, 200,000 by default: its notes say so), steps it
        does not have, or a target that matches no device work in them.

        Worst case: the profile's stored schedules (about 100 bytes a device op before deflating, at most
        `WORTHIT_MAX_SCHEDULE_OPS` ops a trace) are read a row at a time and decoded, and the replay holds about 1 KB
        an op at its peak; one what-if or proposal naming a profile at a time per process."""
        return await profiles.what_if(profile_id, [t.target() for t in data.targets], data.steps)


class SummariesController(Controller):
    """Apart from `ProfileController`: its body limit is its own (`WORTHIT_MAX_SUMMARIES_BYTES`), not an upload's."""

    path = "/v1/profiles/summaries"
    tags = ("profiles",)

    @post(
        "/",
        opt={"scope": "write"},
        status_code=201,
        responses=problem_responses(*BODY_PROBLEMS, 503),
        dto=RawJSON[RankSummary],
    )
    async def upload_summaries(
        self,
        data: JSONBody[list[RankSummary]],
        profiles: NamedDependency[ProfileService],
        name: Annotated[
            str | None,
            QueryParameter(max_length=200, pattern=TEXT_PATTERN, description="A label, e.g. the run's name."),
        ] = None,
    ) -> Response[ProfileDoc]:
        """Store a distributed run from its ranks' summaries (format `worthit-rank-summary`, version 1: made where each
        trace lives by `worthit profile --summary TRACE -o SUMMARY`), as a JSON array of them. The figures are those
        of reading the raw traces together: per rank and per step, the straggler and the wait inside collectives. A
        summary of another version is refused (422) naming the versions read. `POST /v1/profiles` takes the same
        summaries as files (one as the body, several as multipart).

        Limits: the body at most `WORTHIT_MAX_SUMMARIES_BYTES` (8 MiB: 413 beyond); at most 4,096 summaries, 4,096
        step figures per summary and 16,384 phases per summary's breakdown and per step (422 naming the field and
        its cap); the stored breakdown at most `WORTHIT_MAX_STORED_PROFILE_BYTES` (8 MiB) of JSON (413).

        Worst case: the body is held as bytes by the server; it is decoded, checked and combined (linear in the
        summaries) in the parse worker, a process of at most `WORTHIT_MAX_PARSE_MEMORY_BYTES`, one at a time in the
        pod, killed when the request ends (its deadline, the client gone, the server stopping): 503 when it is
        stopped from outside."""
        # The DTO hands over the body's bytes: the summaries are decoded once, strictly, in the parse worker.
        doc = await profiles.create_from_summaries(cast("bytes", data), name=name)
        return Response(doc, status_code=201, headers={"Location": f"/v1/profiles/{doc.id}"})
