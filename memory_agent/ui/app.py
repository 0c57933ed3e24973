"""The inspector's ASGI app: routes, the forms that write, and pages for every failure.

Pages are rendered on the server with Jinja2 (autoescape on: every value is text, never markup).
Each write is a POST carrying the session's CSRF token, answered with a redirect to a page
(POST-redirect-GET); a refused write changes nothing and answers with an error page saying why.
Manager calls run in a worker thread so a slow query never stalls the event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..authors import AUTHOR_KINDS, Author, acting_as
from ..errors import (
    AgentNotFoundError,
    ArchivalError,
    BlockLimitExceededError,
    BlockNotFoundError,
    ConfigurationError,
    InvalidLabelError,
    MemoryAgentError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleBlockError,
    StorageError,
)
from ..manager import MemoryManager
from ..privacy.sensitivity import DEFAULT_CLEARANCE, Sensitivity, parse_level, with_clearance
from . import views
from .security import SESSION_COOKIE, Guard, GuardPolicy

__all__ = ["FLASHES", "ManagerSource", "create_app"]

HERE = Path(__file__).parent
ManagerSource = MemoryManager | Callable[[], MemoryManager]

FLASHES = {
    "saved": "Saved: the block's new value is stored and journalled.",
    "unchanged": "Nothing to save: the value is the same as the block's current one.",
    "undone": "Undone: the block is back at its previous value.",
    "in_prompt": "The block is now in the prompt.",
    "on_demand": "The block is now on demand: listed in the prompt, read with the memory tool.",
    "deleted": "Passage deleted.",
}
"""The only messages a redirect can ask a page to show (a URL cannot inject text)."""

MAX_FORM_BYTES = 2_000_000


class _Refused(Exception):
    """A request the inspector answers with an error page: status and one clear line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _status_of(error: MemoryAgentError) -> int:
    if isinstance(error, (AgentNotFoundError, BlockNotFoundError)):
        return 404
    if isinstance(error, _NoPassage):
        return 404
    if isinstance(error, StorageError):
        return 503
    if isinstance(error, (StaleBlockError, NothingToUndoError, ReadOnlyBlockError)):
        return 409
    if isinstance(error, (ConfigurationError, InvalidLabelError, BlockLimitExceededError)):
        return 400
    return 409  # any other refusal: the request was fine, the memory's state refused it


def _one_line(text: str, limit: int = 600) -> str:
    joined = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def create_app(
    manager: ManagerSource,
    *,
    read_only: bool = False,
    access_token: str | None = None,
    bound_host: str = "127.0.0.1:8765",
    user: Author | None = None,
    clearance: Sensitivity = DEFAULT_CLEARANCE,
) -> Starlette:
    """The inspector for one storage dir.

    `manager` is an open MemoryManager (the caller closes it) or a factory called on the first
    request (the app closes what it opened at shutdown). `bound_host` is the `host:port` the server
    listens on: requests naming another Host are refused. Off loopback `access_token` is required.
    UI edits are journalled as `user` (default: the OS user, as a person). Every page shows what
    `clearance` allows (private by default: secret blocks and passages are left out, as in every
    other reader; 'secret' shows them, 'public' only what may be shared).
    """
    policy = GuardPolicy.make(bound_host, access_token, read_only)
    level = parse_level(clearance, "clearance")
    author = user or Author.person()
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["q"] = lambda text: quote(str(text), safe="/")
    opened: list[MemoryManager] = []
    lock = threading.Lock()

    def memory() -> MemoryManager:
        if isinstance(manager, MemoryManager):
            return manager
        with lock:
            if not opened:
                opened.append(manager())
            return opened[0]

    def page(
        request: Request, template: str, context: Mapping[str, Any], status: int = 200
    ) -> HTMLResponse:
        flash = FLASHES.get(request.query_params.get("flash", ""))
        body = templates.get_template(template).render(
            **context,
            read_only=read_only,
            csrf_token=request.scope.get("state", {}).get("csrf_token", ""),
            flash=flash,
            user=author,
            author_kinds=AUTHOR_KINDS,
        )
        return HTMLResponse(body, status_code=status)

    async def error_page(request: Request, status: int, message: str) -> Response:
        body = templates.get_template("error.html").render(
            status=status,
            message=message,
            read_only=read_only,
            csrf_token="",
            flash=None,
            user=author,
        )
        return HTMLResponse(body, status_code=status)

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        """`function(memory, *args)` in a worker thread (opening the store too), its refusals as
        pages."""
        try:
            return await run_in_threadpool(lambda: _cleared(memory(), level, function, *args))
        except MemoryAgentError as error:
            raise _Refused(_status_of(error), _one_line(str(error))) from None

    # ----- pages -----------------------------------------------------------------------

    async def agents(request: Request) -> Response:
        return page(request, "agents.html", await call(views.agents_page))

    async def agent_memory(request: Request) -> Response:
        return page(request, "memory.html", await call(views.memory_page, _agent(request)))

    async def block(request: Request) -> Response:
        if request.method == "POST":
            return await edit_block(request)
        return page(
            request,
            "block.html",
            await call(views.block_page, _agent(request), request.path_params["label"]),
        )

    async def journal(request: Request) -> Response:
        kind = request.query_params.get("author_kind") or None
        if kind is not None and kind not in AUTHOR_KINDS:
            raise _Refused(
                400, f"author_kind is one of {', '.join(AUTHOR_KINDS)}; got {kind[:40]!r}."
            )
        return page(request, "journal.html", await call(views.journal_page, _agent(request), kind))

    async def conversation(request: Request) -> Response:
        limit = _int_param(request, "limit", views.MESSAGES_SHOWN, 1, 100_000)
        return page(
            request,
            "conversation.html",
            await call(views.conversation_page, _agent(request), limit),
        )

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        if len(query) > 2000:
            raise _Refused(400, "A search query is at most 2,000 characters.")
        mode = request.query_params.get("mode", "hybrid")
        number = _int_param(request, "page", 0, 0, 1_000_000)
        return page(
            request,
            "search.html",
            await call(views.search_page, _agent(request), query, mode, number),
        )

    async def prompt(request: Request) -> Response:
        return page(request, "prompt.html", await call(views.prompt_page, _agent(request)))

    async def metrics(request: Request) -> Response:
        return page(request, "metrics.html", await call(views.metrics_page, _agent(request)))

    async def stylesheet(request: Request) -> Response:
        return FileResponse(HERE / "static" / "style.css", media_type="text/css")

    # ----- writes ----------------------------------------------------------------------

    async def write_form(request: Request) -> FormData:
        """The form of a write, after the CSRF check (403 and nothing changed without a valid
        token)."""
        length = request.headers.get("content-length")
        if length is None:  # browsers always say; a body without a length could be endless
            raise _Refused(
                411, "A form must be sent with its length (Content-Length); nothing was changed."
            )
        if not length.isdigit() or int(length) > MAX_FORM_BYTES:
            raise _Refused(413, "The form is too large (at most 2 MB); nothing was changed.")
        try:
            form = await request.form(max_files=0, max_fields=20)
        except Exception:  # a malformed body is the client's error, never a traceback
            raise _Refused(400, "The form could not be read; nothing was changed.") from None
        if not policy.csrf_valid(request.cookies.get(SESSION_COOKIE), form.get("csrf_token")):
            raise _Refused(
                403,
                "The form's security token is missing or wrong (CSRF check); nothing was changed. "
                "Reload the page and try again.",
            )
        return form

    def as_user(function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            with acting_as(author):
                return function(*args)

        return run

    async def edit_block(
        request: Request, form: FormData | None = None, label: str | None = None
    ) -> Response:
        form = form if form is not None else await write_form(request)
        agent_id, label = _agent(request), label or request.path_params["label"]
        value = _text_field(form, "value").replace("\r\n", "\n")
        expected = _text_field(form, "expected_version")
        if not expected.isdigit() or len(expected) > 12:
            raise _Refused(
                400, "The form's expected_version must be a whole number; nothing was changed."
            )
        outcome = await call(as_user(_save), agent_id, label, value, int(expected))
        if isinstance(outcome, StaleBlockError):
            raise _Refused(
                409,
                f"The block '{label}' changed since you opened it (you edited version {expected}, "
                f"it is now at version {outcome.version}); nothing was changed. Reload the page "
                "and redo your edit on the current value.",
            )
        return _back(request, f"/agents/{agent_id}/blocks/{label}", outcome)

    async def undo(request: Request) -> Response:
        form = await write_form(request)
        agent_id, label = _agent(request), request.path_params["label"]
        if "expected_version" in form:  # the edit form of a block whose label ends in /undo
            return await edit_block(request, form, f"{label}/undo")
        await call(as_user(lambda memory: memory.undo_block(label, agent_id=agent_id)))
        return _back(request, f"/agents/{agent_id}/blocks/{label}", "undone")

    async def placement(request: Request) -> Response:
        form = await write_form(request)
        agent_id, label = _agent(request), request.path_params["label"]
        if "expected_version" in form:  # the edit form of a block whose label ends in /placement
            return await edit_block(request, form, f"{label}/placement")
        chosen = _text_field(form, "placement")
        if chosen not in ("in_prompt", "on_demand"):
            raise _Refused(400, "placement is 'in_prompt' or 'on_demand'; nothing was changed.")
        await call(
            as_user(
                lambda memory: memory.update_block(
                    label, in_prompt=chosen == "in_prompt", agent_id=agent_id
                )
            )
        )
        return _back(request, f"/agents/{agent_id}/blocks/{label}", chosen)

    async def delete_passage(request: Request) -> Response:
        form = await write_form(request)
        agent_id, passage_id = _agent(request), request.path_params["passage_id"]
        await call(as_user(_delete_passage), agent_id, passage_id)
        query = {key: _text_field(form, key) for key in ("q", "mode") if _text_field(form, key)}
        return _back(request, f"/agents/{agent_id}/search", "deleted", query)

    # ----- errors ----------------------------------------------------------------------

    async def refused(request: Request, error: Exception) -> Response:
        assert isinstance(error, _Refused)
        return await error_page(request, error.status, error.message)

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        messages = {
            404: "There is no such page here.",
            405: "This page does not take that kind of request.",
        }
        return await error_page(
            request,
            error.status_code,
            messages.get(error.status_code, f"The request was refused ({error.status_code})."),
        )

    async def failed(request: Request, error: Exception) -> Response:
        # Starlette re-raises the error after this page is sent, so the server logs its traceback.
        return await error_page(
            request,
            500,
            f"The inspector failed unexpectedly ({type(error).__name__}); nothing "
            "more was done. The server's log has the details.",
        )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> Any:
        yield
        for opened_manager in opened:
            opened_manager.close()

    agent = "/agents/{agent_id}"
    label = agent + "/blocks/{label:path}"
    routes = [
        Route("/", agents, methods=["GET"]),
        Route("/style.css", stylesheet, methods=["GET"]),
        Route(label + "/undo", undo, methods=["POST"]),
        Route(label + "/placement", placement, methods=["POST"]),
        Route(agent + "/journal", journal, methods=["GET"]),
        Route(agent + "/conversation", conversation, methods=["GET"]),
        Route(agent + "/search", search, methods=["GET"]),
        Route(agent + "/prompt", prompt, methods=["GET"]),
        Route(agent + "/metrics", metrics, methods=["GET"]),
        Route(agent + "/passages/{passage_id}/delete", delete_passage, methods=["POST"]),
        Route(label, block, methods=["GET", "POST"]),
        Route(agent, agent_memory, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={_Refused: refused, HTTPException: http_error, Exception: failed},
    )
    app.add_middleware(Guard, policy=policy, error_page=error_page)
    return app


def _agent(request: Request) -> str:
    return str(request.path_params["agent_id"])


def _text_field(form: FormData, name: str) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Refused(400, f"The form field {name} must be text; nothing was changed.")
    return value


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    if not text.isdigit() or len(text) > 9 or not low <= int(text) <= high:
        raise _Refused(400, f"{name} must be a whole number from {low} to {high}.")
    return int(text)


def _save(
    memory: MemoryManager, agent_id: str, label: str, value: str, expected: int
) -> str | StaleBlockError:
    """Write the owner's new value only if the block is still at the version the form showed:
    the check and the write are one transaction, so no edit landing in between is overwritten."""
    views.require_agent(memory, agent_id)
    with memory.atomic():
        current = memory.get_block(label, agent_id=agent_id)
        if current.version != expected:
            return StaleBlockError(label, current.value, current.version)
        if current.value == value:
            return "unchanged"
        memory.update_block(label, value=value, agent_id=agent_id)
    return "saved"


def _delete_passage(memory: MemoryManager, agent_id: str, passage_id: str) -> None:
    views.require_agent(memory, agent_id)
    if memory.archival_memory_get(passage_id, agent_id=agent_id) is None:
        raise _NoPassage(passage_id)
    memory.archival_memory_delete(passage_id, agent_id=agent_id)


class _NoPassage(ArchivalError):
    def __init__(self, passage_id: str) -> None:
        super().__init__(f"This agent has no passage {passage_id[:80]!r}; nothing was deleted.")


def _back(
    request: Request, path: str, flash: str, query: Mapping[str, str] | None = None
) -> Response:
    """POST-redirect-GET: to the page the write belongs to, with one of the fixed FLASHES."""
    target = quote(path, safe="/") + "?" + urlencode({**(query or {}), "flash": flash})
    return RedirectResponse(target, status_code=303)


def _cleared(
    memory: MemoryManager, level: Sensitivity, function: Callable[..., Any], *args: Any
) -> Any:
    """`function(memory, *args)` at the inspector's clearance (a worker thread has none of its
    own)."""
    with with_clearance(level):
        return function(memory, *args)
