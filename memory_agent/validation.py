"""Checking values where they enter memory-agent: one rule per kind of value, shared by every door.

The public doors (the Python API, the model's tools, the CLI, imported files) hand values to
storage that SQLite and JSON cannot all hold: a Python int past 64 bits overflows SQLite, a lone
UTF-16 surrogate (`"\\ud800"`, which JSON escapes and non-UTF-8 command-line bytes both produce)
cannot be encoded as UTF-8, and JSON nested thousands deep exhausts Python's recursion. Each is
refused here, before anything is written, with a `ConfigurationError` naming the value.

Lone surrogates are refused, not replaced: replacing them would store text the caller did not
write, silently; a refusal says which value to fix, and nothing is changed.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigurationError

__all__ = [
    "MAX_INT",
    "MAX_JSON_DEPTH",
    "MIN_INT",
    "check_int",
    "check_json",
    "check_path",
    "check_text",
    "checked_arguments",
    "checked_methods",
]

MAX_INT = 2**63 - 1
MIN_INT = -(2**63)
"""SQLite's INTEGER range: a larger Python int cannot be stored or compared by SQLite."""
MAX_JSON_DEPTH = 100
"""Deepest nesting of lists and objects accepted in stored JSON (messages, metadata, imports)."""

F = TypeVar("F", bound=Callable[..., Any])


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _surrogate_error(name: str, text: str) -> ConfigurationError:
    position = next(i for i, char in enumerate(text) if "\ud800" <= char <= "\udfff")
    return ConfigurationError(
        f"{name} holds a lone surrogate (U+{ord(text[position]):04X} at position {position}), "
        "which "
        "is not "
        "valid Unicode and cannot be stored; nothing was changed. Send valid UTF-8 text."
    )


def _valid_unicode(name: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _surrogate_error(name, text) from None


def check_text(name: str, value: object, *, optional: bool = False) -> str | None:
    """`value` if it is valid Unicode text (None too when `optional`); else ConfigurationError."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(
            f"{name} must be text, got {type(value).__name__} {_describe(value)}."
        )
    _valid_unicode(name, value)
    return value


def check_int(
    name: str,
    value: object,
    *,
    minimum: int = MIN_INT,
    maximum: int = MAX_INT,
    optional: bool = False,
) -> int | None:
    """`value` if it is a whole number (not a bool) within [minimum, maximum]."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(
            f"{name} must be a whole number, got {type(value).__name__} {_describe(value)}."
        )
    if not minimum <= value <= maximum:
        raise ConfigurationError(
            f"{name} must be from {minimum} to {maximum}, got {_describe(value)}."
        )
    return value


def check_path(name: str, value: object) -> Path:
    """`value` as a Path, if a file system can hold it: text (or a path object) of valid Unicode
    without a NUL character, which no file system allows and Python refuses deep in `os`."""
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigurationError(f"{name} must be a path, got {type(value).__name__}.")
    text = os.fspath(value)
    if isinstance(text, bytes):
        raise ConfigurationError(f"{name} must be a path as text, got bytes.")
    _valid_unicode(name, text)
    if "\0" in text:
        raise ConfigurationError(
            f"{name} holds a NUL character (at position {text.index(chr(0))}), which no file "
            "system allows in a path; nothing was opened. Give the directory's real path."
        )
    return Path(text)


_JSON_SCALARS = (str, int, float, bool, type(None))


def check_json(
    name: str, value: Any, *, max_depth: int = MAX_JSON_DEPTH, strict: bool = False
) -> Any:
    """Walk lists, tuples and mappings (without recursion): text must be valid Unicode, ints fit
    SQLite, mapping keys are text, nesting is at most `max_depth`. Other values pass as they are
    (their own checks, if any, happen where they are used), unless `strict`: then the value is
    stored as JSON, and anything JSON cannot hold (a set, bytes, an object) is refused here
    rather than by `json.dumps` halfway through a write. Returns `value`."""
    stack: list[tuple[str, Any, int]] = [(name, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if strict and not isinstance(item, (*_JSON_SCALARS, list, tuple, Mapping)):
            raise ConfigurationError(
                f"{where} is a {type(item).__name__}, which cannot be stored as JSON; nothing was "
                "changed. "
                "Use text, numbers, true/false, null, lists and objects with text keys."
            )
        if strict and isinstance(item, float) and not math.isfinite(item):
            raise ConfigurationError(
                f"{where} is {item}, which JSON cannot hold; nothing was changed."
            )
        if isinstance(item, str):
            _valid_unicode(where, item)
        elif isinstance(item, int) and not isinstance(item, bool):
            check_int(where, item)
        elif isinstance(item, (list, tuple, Mapping)):
            if depth >= max_depth:
                raise ConfigurationError(
                    f"{where} is nested more than {max_depth} levels deep; nothing was changed. "
                    "Flatten the value."
                )
            if isinstance(item, Mapping):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise ConfigurationError(
                            f"{where} has a key {_describe(key)}; keys must be text."
                        )
                    _valid_unicode(f"{where} key {_describe(key)}", key)
                    stack.append((f"{where}[{key!r}]"[:120], inner, depth + 1))
            else:
                stack.extend(
                    (f"{where}[{index}]", inner, depth + 1) for index, inner in enumerate(item)
                )
    return value


# ----- checking a function's arguments by its annotations ---------------------------------------


def _is_json_type(annotation: Any) -> bool:
    """Whether a value of this annotation is plain JSON: text, numbers, flags, None, Any, and the
    concrete `list[...]` and `dict[str, ...]` of such (abstract Sequence or Mapping may be other
    objects on purpose)."""
    if annotation in (*_JSON_SCALARS, Any):
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict):
        return all(_is_json_type(argument) for argument in typing.get_args(annotation))
    return False


def _shape_matches(annotation: Any, value: Any) -> bool:
    """The value's outer shape is the annotation's: the right container, and for a list of
    objects, objects in it."""
    origin = typing.get_origin(annotation)
    if origin is dict:
        return isinstance(value, Mapping)
    if origin is list:
        inner = (typing.get_args(annotation) or (Any,))[0]
        return isinstance(value, list) and (
            typing.get_origin(inner) is not dict or all(isinstance(item, Mapping) for item in value)
        )
    if annotation is Any:
        return True
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, annotation) and (annotation is bool or not isinstance(value, bool))


def _json_checker(members: tuple[Any, ...]) -> Callable[[str, Any], Any]:
    def check(name: str, value: Any) -> Any:
        if not any(_shape_matches(member, value) for member in members):
            wanted = " or ".join(_shape_name(member) for member in members)
            raise ConfigurationError(
                f"{name} must be {wanted}, got {type(value).__name__} {_describe(value)}; "
                "nothing was changed."
            )
        return check_json(name, value, strict=True)

    return check


def _shape_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is list:
        inner = (typing.get_args(annotation) or (Any,))[0]
        return "a list of objects" if typing.get_origin(inner) is dict else "a list"
    if origin is dict:
        return "an object (a dict with text keys)"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def _checker(annotation: Any) -> Callable[[str, Any], Any]:
    """The check for one parameter annotation: exact for text, whole numbers and flags (with or
    without None); for plain JSON shapes (`dict[str, Any]`, `str | list[dict[str, Any]]`), the
    shape and `check_json(strict=True)`; for anything else, `check_json` on whatever JSON-like
    parts it holds."""
    origin = typing.get_origin(annotation)
    members = (
        typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    )
    optional = type(None) in members
    simple = [m for m in members if m is not type(None)]
    if any(typing.get_origin(m) in (list, dict) for m in simple) and all(
        _is_json_type(m) for m in members
    ):
        return _json_checker(members)
    if simple == [str]:
        return lambda name, value: check_text(name, value, optional=optional)
    if simple == [int]:
        return lambda name, value: check_int(name, value, optional=optional)
    if simple == [bool]:

        def check_flag(name: str, value: Any) -> Any:
            if value is None and optional:
                return value
            if not isinstance(value, bool):
                raise ConfigurationError(f"{name} must be true or false, got {_describe(value)}.")
            return value

        return check_flag
    return check_json


def checked_arguments(function: F) -> F:
    """Decorate a public function so every argument is checked against its annotation first.

    Annotations are resolved on the first call (they may name types defined later in the
    module). Works for plain and async functions.
    """
    checks: dict[str, Callable[[str, Any], Any]] | None = None
    signature = inspect.signature(function)
    label = function.__qualname__

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        nonlocal checks
        if checks is None:
            hints = typing.get_type_hints(function)
            checks = {name: _checker(hints.get(name, Any)) for name in signature.parameters}
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise ConfigurationError(f"{label}: {error}.") from None
        for name, value in bound.arguments.items():
            if name == "self":
                continue
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                for key, inner in value.items():
                    check_json(f"{label}: '{key}'", inner)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                check_json(f"{label}: '{name}'", list(value))
            else:
                checks[name](f"{label}: '{name}'", value)

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            check(args, kwargs)
            return await function(*args, **kwargs)

        return typing.cast(F, checked_async)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check(args, kwargs)
        return function(*args, **kwargs)

    return typing.cast(F, checked)


def checked_methods(*, exclude: tuple[str, ...] = ()) -> Callable[[type[Any]], type[Any]]:
    """Class decorator: `checked_arguments` on `__init__` and every public method it defines
    (not properties), except those named in `exclude`."""

    def decorate(cls: type[Any]) -> type[Any]:
        for name, attribute in list(vars(cls).items()):
            public = name == "__init__" or not name.startswith("_")
            if public and name not in exclude and inspect.isfunction(attribute):
                setattr(cls, name, checked_arguments(attribute))
        return cls

    return decorate
