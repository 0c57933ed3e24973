"""Who acted: the author the journal records with every change to memory.

An audit trail must tell the model's own edit from a person's correction, an import or another
agent's write, so every journal entry (and every saved block version) names its author: a kind
and a name. The kinds:

- `model`: an agent's model, through a memory tool (the tool path, the MCP server, Anthropic's
  memory tool); the name is the agent id.
- `person`: a person, through the CLI, the Python API or an inspector; the name is who (the OS
  user by default).
- `import`: an import (project JSON, Letta `.af`); the name is the source.
- `agent`: another agent, acting on memory it shares or does not own, outside its model's tool
  calls (a multi-agent program writing for one agent into another's memory). Views also show a
  model edit of a shared block made by a different agent than the one viewed as `agent`
  (`Author.seen_by`), because to that agent it is another agent's change.
- `consolidator`: the memory consolidator; the name is its session id.

Which author is current is a context variable (`acting_as`), so it follows each thread and each
asyncio task on its own: a tool running in a worker thread under the model's author never
changes what a person's call in another thread records.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, cast

from .errors import ConfigurationError
from .validation import check_text

__all__ = ["AUTHOR_KINDS", "Author", "AuthorKind", "acting_as", "acting_author"]

AuthorKind = Literal["model", "person", "import", "agent", "consolidator"]
AUTHOR_KINDS: tuple[AuthorKind, ...] = ("model", "person", "import", "agent", "consolidator")
MAX_AUTHOR_NAME_CHARS = 200
"""An author's name is one short line: journal tables and prompts show it inline."""


def _check_name(name: str) -> None:
    """One line of printable text of bounded length: a line break or control character in a name
    would let it pose as a second author (or a new section) wherever the journal is shown."""
    if not name.strip():
        raise ConfigurationError("An author's name must not be empty or blank; name who acted.")
    if len(name) > MAX_AUTHOR_NAME_CHARS:
        raise ConfigurationError(
            f"An author's name is at most {MAX_AUTHOR_NAME_CHARS} characters; got {len(name)}. "
            "Use a shorter name."
        )
    _check_line(name)


def _check_line(name: str) -> None:
    bad = next((char for char in name if not (char.isprintable() or char == " ")), None)
    if bad is not None:
        raise ConfigurationError(
            f"An author's name must be one line of printable text; {name!r} holds {bad!r} "
            f"(U+{ord(bad):04X}), a line "
            "break or control character. Remove it."
        )


def _shown(name: str) -> str:
    """A stored name that predates the rules above, made safe to show (escapes, cut to length)."""
    text = "".join(
        char if char.isprintable() or char == " " else f"\\u{ord(char):04x}" for char in name
    )
    text = text[:MAX_AUTHOR_NAME_CHARS]
    return text if text.strip() else "?"


@dataclass(frozen=True)
class Author:
    """Who made a change: a kind (one of AUTHOR_KINDS) and a name (agent id, user, source)."""

    kind: AuthorKind
    name: str

    def __post_init__(self) -> None:
        if self.kind not in AUTHOR_KINDS:
            raise ConfigurationError(
                f"An author's kind must be one of {', '.join(AUTHOR_KINDS)}; got {self.kind!r}."
            )
        name = check_text("An author's name", self.name)
        assert name is not None
        _check_name(name)

    @classmethod
    def model(cls, agent_id: str) -> Author:
        """The model of agent `agent_id`, editing through a memory tool."""
        return cls("model", agent_id)

    @classmethod
    def person(cls, name: str | None = None) -> Author:
        """A person; by default the user this process runs as (or "user" when unknown)."""
        return cls("person", name if name is not None else _os_user())

    @classmethod
    def importer(cls, source: str) -> Author:
        """An import from `source` (a file name, or a format such as "letta-af")."""
        return cls("import", source)

    @classmethod
    def other_agent(cls, agent_id: str) -> Author:
        """Another agent, `agent_id`, writing outside its model's tool calls."""
        return cls("agent", agent_id)

    @classmethod
    def consolidator(cls, session_id: str) -> Author:
        """The memory consolidator, in its session `session_id`."""
        return cls("consolidator", session_id)

    @classmethod
    def parse(cls, text: str) -> Author:
        """`kind:name` (as the CLI's --author takes it), or a bare name for a person.

        'consolidator' is refused: only the engine acts as it (`Author.consolidator`)."""
        check_text("author", text)
        _check_line(text)
        kind, sep, name = text.partition(":")
        if not sep:
            return cls.person(text)
        if kind not in AUTHOR_KINDS:
            raise ConfigurationError(
                f"An author is 'kind:name' with kind one of {', '.join(AUTHOR_KINDS)}, or a "
                "person's name; "
                f"got {text!r}."
            )
        if kind == "consolidator":
            raise ConfigurationError(
                f"Only the consolidation engine writes as 'consolidator' (got {text!r}); a "
                "rollback "
                "trusts its "
                "entries. Write as yourself (a person's name) or another kind: "
                f"{', '.join(k for k in AUTHOR_KINDS if k != 'consolidator')}."
            )
        return cls(kind, name)

    @classmethod
    def from_columns(cls, kind: str | None, name: str | None) -> Author | None:
        """The author stored in a row, or None for rows written before authors were recorded."""
        if kind is None or name is None:
            return None
        try:
            return cls(cast(AuthorKind, kind), name)
        except ConfigurationError:  # a row written before names were checked: show it, escaped
            return cls(cast(AuthorKind, kind), _shown(name))

    def seen_by(self, agent_id: str | None) -> Author:
        """This author as agent `agent_id` sees it: another agent's model is another agent."""
        if self.kind == "model" and agent_id is not None and self.name != agent_id:
            return Author.other_agent(self.name)
        return self

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def _os_user() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no USER/LOGNAME and no passwd entry (containers): a person all the same
        return "user"
    return user if user and user.strip() else "user"


_ACTING: ContextVar[Author | None] = ContextVar("memory_agent_acting_author", default=None)


def acting_author() -> Author | None:
    """The author set by the innermost `acting_as` of this thread or task, if any."""
    return _ACTING.get()


def acting_as(author: Author) -> AbstractContextManager[Author]:
    """Make `author` the author of every journal entry written inside (this thread or task only).

    Nests: the inner author wins, and the outer one is back on exit, also after an exception.
    A wrong argument is refused at the call, before any `with` block runs.
    """
    if not isinstance(author, Author):
        raise ConfigurationError(
            f"acting_as takes an Author (e.g. Author.person()), got {type(author).__name__}."
        )
    return _acting(author)


@contextmanager
def _acting(author: Author) -> Iterator[Author]:
    token = _ACTING.set(author)
    try:
        yield author
    finally:
        _ACTING.reset(token)
