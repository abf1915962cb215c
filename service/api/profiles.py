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
from worthit.rules.profiles.kineto import STEPS_MAX_LENGTH, STEPS_PATTERN
from worthit.rules.profiles.kineto.summary import RankSummary
from worthit.service.http.caching import IfNoneMatch, tagged_json
from worthit.service.http.codec import StrictJSONArray
from worthit.service.http.problems import BODY_PROBLEMS, problem_responses
from worthit.service.profiles.schemas import ProfileDoc
from worthit.service.profiles.service import ProfileService

__all__ = ["ProfileController"]


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

    @post(
        "/summaries",
        dto=StrictJSONArray[RankSummary],
        return_dto=None,
        opt={"scope": "write"},
        status_code=201,
        responses=problem_responses(*BODY_PROBLEMS),
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
        summaries as files (one as the body, several as multipart)."""
        # `data` is decoded strictly, like every JSON body of the API (Litestar's own conversion would take
        # `"straggler": 0` for a boolean, and its decoding raised RecursionError on an array 1,000 levels deep).
        doc = await profiles.create_from_summaries(data, name=name)
        return Response(doc, status_code=201, headers={"Location": f"/v1/profiles/{doc.id}"})

    @get("/{profile_id:str}", opt={"scope": "read"}, responses=problem_responses(404))
    async def read(
        self, profile_id: FromPath[str], profiles: NamedDependency[ProfileService], if_none_match: IfNoneMatch = None
    ) -> Response[ProfileDoc]:
        """One stored profile's breakdown, with its `ETag` (`If-None-Match` with it answers 304).

        Worst case: the stored document (names cut to 16,384 characters, 1,024 phases at most; the parse worker's
        answer is 64 MiB at most) is held as the database's text and the body's bytes; it is never decoded."""
        # The documented type is the stored document's: it is served as stored, without decoding it.
        return cast("Response[ProfileDoc]", tagged_json(await profiles.document(profile_id), if_none_match))
