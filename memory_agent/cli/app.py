"""The root of the CLI: the `memory-agent` group, the options every command shares, error handling.

The global options (`--storage-dir`, `--agent`, `--json`) are accepted both before the command
(`memory-agent --json blocks list`) and after it (`memory-agent blocks list --json`); a value given
after the command wins. Every error memory-agent raises on purpose becomes one line on stderr and
exit status 1: the library's messages already say what happened and what to do.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from ..authors import Author, acting_as
from ..errors import MemoryAgentError
from ..maintenance.admin import init_storage, open_agent, storage_path
from ..manager import MemoryManager
from ..privacy.sensitivity import Sensitivity, with_clearance
from ..settings import Settings

__all__ = [
    "CliState",
    "MemoryAgentGroup",
    "cli",
    "configure_logging",
    "load_settings",
    "one_line",
    "open_memory",
    "shared_options",
    "state",
]

F = TypeVar("F", bound=Callable[..., Any])
_STATE_KEY = "memory_agent.cli.state"
_LIBRARY_LOGGERS = ("memory_agent", "compaction")


@dataclass
class CliState:
    """What the global options chose, wherever on the command line they were given."""

    storage_dir: Path | None = None
    database_url: str | None = None
    agent_id: str | None = None
    json: bool = False
    author: Author | None = None
    clearance: Sensitivity | None = None


def state(ctx: click.Context | None = None) -> CliState:
    """The state shared by every context of this invocation (click's `meta` is shared)."""
    meta = (ctx or click.get_current_context()).meta
    return meta.setdefault(_STATE_KEY, CliState())


def _store(field: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value not in (None, False):
            setattr(state(ctx), field, value)

    return callback


def _author(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """--author: every change this invocation makes is journalled as this author."""
    if value is None:
        return
    try:
        author = Author.parse(value)
    except MemoryAgentError as error:
        raise click.BadParameter(one_line(str(error))) from None
    state(ctx).author = author
    ctx.with_resource(acting_as(author))


def _clearance(level: Sensitivity) -> Callable[[click.Context, click.Parameter, bool], None]:
    """--allow-secret and --public-only: every read of this invocation (listing, search, export)
    sees up to this level instead of the default, private (`memory_agent.privacy.sensitivity`)."""

    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if not value:
            return
        chosen = state(ctx)
        if chosen.clearance not in (None, level):
            raise click.UsageError("Give --allow-secret or --public-only, not both.")
        chosen.clearance = level

    return callback


def _under_chosen_clearance(function: F) -> F:
    """`function` run under the clearance --allow-secret or --public-only chose, if any.

    Why not a resource of the context, entered by the option's callback: click does not close a
    context whose arguments fail to parse, so a usage error after the option (both options at
    once, say) left the clearance raised in the caller's thread for every later read there."""

    @functools.wraps(function)
    def cleared(*args: Any, **kwargs: Any) -> Any:
        chosen = state().clearance
        if chosen is None:
            return function(*args, **kwargs)
        with with_clearance(chosen):
            return function(*args, **kwargs)

    return cast(F, cleared)


def shared_options(function: F) -> F:
    """Add --storage-dir, --agent, --author and --json to a command (and to the root group)."""
    options = [
        click.option(
            "--storage-dir",
            "chosen_storage_dir",
            type=click.Path(file_okay=False, path_type=Path),
            expose_value=False,
            callback=_store("storage_dir"),
            help="Storage dir holding memory.db (default: PERSIST_DIRECTORY, else "
            "~/.memory_agent).",
        ),
        click.option(
            "--database-url",
            "chosen_database_url",
            metavar="URL",
            expose_value=False,
            callback=_store("database_url"),
            help="PostgreSQL server holding the memory, for agents on many hosts "
            "(default: MEMORY_DATABASE_URL, else SQLite in the storage dir).",
        ),
        click.option(
            "--agent",
            "chosen_agent",
            metavar="AGENT_ID",
            expose_value=False,
            callback=_store("agent_id"),
            help="Agent to act as (default: AGENT_ID, else the storage dir's default agent).",
        ),
        click.option(
            "--author",
            "chosen_author",
            metavar="NAME|KIND:NAME",
            expose_value=False,
            callback=_author,
            help="Who the journal names for your changes: a person's name, or KIND:NAME with KIND "
            "one "
            "of person, model, import, agent, consolidator (default: you, the OS user).",
        ),
        click.option(
            "--json",
            "json_output",
            is_flag=True,
            expose_value=False,
            callback=_store("json"),
            help="Print machine-readable JSON instead of tables.",
        ),
        click.option(
            "--allow-secret",
            "allow_secret",
            is_flag=True,
            expose_value=False,
            callback=_clearance("secret"),
            help="Include secret blocks and passages (left out of listings, searches and exports "
            "by default).",
        ),
        click.option(
            "--public-only",
            "public_only",
            is_flag=True,
            expose_value=False,
            callback=_clearance("public"),
            help="Only public blocks and passages (e.g. an export to share).",
        ),
    ]
    function = _under_chosen_clearance(function)
    for option in reversed(options):
        function = option(function)
    return function


def load_settings() -> Settings:
    """Settings from the environment (and ./.env), validated before anything opens; a
    --database-url given on the command line wins over MEMORY_DATABASE_URL."""
    settings = Settings.from_env(env_file=Path(".env"))
    chosen = state().database_url
    return dataclasses.replace(settings, database_url=chosen) if chosen else settings


@contextmanager
def open_memory(
    *,
    create: bool = False,
    agent_id: str | None = None,
    make_default: bool = True,
    take_back: bool = False,
) -> Iterator[MemoryManager]:
    """The chosen agent of the chosen storage dir (see `admin.open_agent`).

    Without `create` both must exist: reading, or naming something that must already be there
    (an id to forget, a version to undo), on a missing store is an error that creates nothing.
    With `create` (the commands that add memory, and `chat`) a missing storage dir and agent are
    created first, as `init` would, and a status line says so: a newcomer's first command works
    whichever it is. `agent_id` is the fallback when no --agent was given, and `make_default=False`
    keeps a new agent from becoming the storage dir's default (both for the offline demo's agent).
    `take_back` (a one-shot command that adds memory): when the command is refused, a SQLite storage
    dir it has just created is removed again, so a refusal changes nothing (never for `chat`, whose
    later error must not take back the turns before it).
    """
    chosen = state()
    settings = load_settings()
    wanted = chosen.agent_id or agent_id
    made: Path | None = None  # a storage dir this command created, to take back if it is refused
    announce = ""
    if create:
        directory = storage_path(chosen.storage_dir, settings)
        fresh = not directory.exists() and not settings.database_url
        info, created = init_storage(
            directory,
            wanted,
            settings=settings,
            make_default=make_default or chosen.agent_id is not None,
            default_existing=False,
        )
        if created and not chosen.json:
            announce = f"Created agent '{info.agent_id}' in {directory}"
        made = directory if fresh and take_back else None
        wanted = info.agent_id
    try:
        memory = open_agent(chosen.storage_dir, wanted, settings=settings)
    except MemoryAgentError:
        _take_back(made)
        raise
    if announce:
        click.echo(announce)
    try:
        yield memory
    except MemoryAgentError:
        # A refused first command (a bad level, label or text) says nothing was changed: on
        # SQLite, the storage dir it had just created goes again.
        memory.close()
        _take_back(made)
        raise
    finally:
        memory.close()


def _take_back(directory: Path | None) -> None:
    """Remove a storage dir this very command created (None: there is none to remove)."""
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
        click.echo(
            f"The command was refused, so {directory}, created for it, was removed again.", err=True
        )


def one_line(message: str) -> str:
    """Our messages are written for one line; join any that span several."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


class MemoryAgentGroup(click.Group):
    """A group that turns every failure into one clear line on stderr and exit status 1, never a
    traceback: memory-agent's own errors as they are, text that is not UTF-8 named as such, and
    anything else (a defect) with its type and the advice to re-run with -v."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _check_arguments(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except MemoryAgentError as error:
            raise click.ClickException(one_line(str(error))) from None
        except UnicodeDecodeError as error:
            raise click.ClickException(
                f"The input is not UTF-8 text ({error.reason} at byte {error.start}); nothing was "
                "changed. Give a UTF-8 text file."
            ) from None
        except RecursionError:
            raise click.ClickException(
                "The input is nested too deeply to read; nothing was changed."
            ) from None
        except Exception as error:
            logging.getLogger("memory_agent.cli").debug("unexpected failure", exc_info=True)
            raise click.ClickException(
                f"memory-agent failed unexpectedly ({type(error).__name__}: "
                f"{one_line(str(error))[:200]}). "
                "Run again with -v for details."
            ) from None


def _check_arguments(arguments: list[str]) -> None:
    """Non-UTF-8 bytes on the command line reach Python as lone surrogates (PEP 383); a NUL (which
    only a caller in-process can pass) would fail deep in `os` as a ValueError."""
    for position, argument in enumerate(arguments, start=1):
        if "\0" in argument:
            raise click.ClickException(
                f"Command-line argument {position} holds a NUL character; nothing was "
                "changed. Give it without one."
            )
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            raise click.ClickException(
                f"Command-line argument {position} "
                f"({argument.encode('utf-8', 'backslashreplace').decode()}) "
                "is not valid UTF-8; nothing was changed. Give it as UTF-8 text."
            ) from None


def configure_logging(verbose: bool) -> None:
    """Commands report outcomes themselves, so library logs and progress bars stay quiet unless -v.

    Without a handler Python prints warnings through its last-resort handler, which would put
    a second, differently worded copy of a command's own message on stderr.
    """
    if not verbose:
        # Loading the embedding model draws a tqdm bar on stderr; the CLI reports its own progress.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for name in _LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
            logger.addHandler(logging.NullHandler())
    if verbose:
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )


@click.group(cls=MemoryAgentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@shared_options
@click.option("-v", "--verbose", is_flag=True, help="Show the library's log on stderr.")
@click.version_option(package_name="memory-agent")
def cli(verbose: bool) -> None:
    """Inspect and edit the durable memory of Claude Agent SDK agents.

    Memory lives in one SQLite database per storage dir: core-memory blocks, the conversation
    (recall memory), summaries, archival passages and an audit journal. The first 'chat' (or
    'chat --offline-demo', no API key needed), or any command that adds memory ('blocks set',
    'blocks append', 'blocks create', 'blocks edit', 'remember', 'consolidate'), creates the
    storage dir and the agent and says so; 'init' does only that. Then see
    'memory-agent COMMAND --help'.
    """
    configure_logging(verbose)
    if (
        state().author is None
    ):  # a person made every change of this command unless --author says otherwise
        click.get_current_context().with_resource(acting_as(Author.person()))
