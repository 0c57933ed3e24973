#!/usr/bin/env python3
"""Move memory-agent's loose root modules into rooms (issue 24, build item 5), mechanically.

Run from the root of a checkout (`python /path/to/move_rooms.py`, or `--dry-run` to list what
it would do). It is idempotent: a second run finds nothing to move and nothing to rewrite, and it
works on a tree whose files were edited since the table below was written, because it reads the
code rather than patching known lines:

1. `git mv memory_agent/<old>.py memory_agent/<room>/<old>.py` for each module of ROOMS that is
   still at the root (module names are kept: only the folder changes), and writes each room's
   `__init__.py` (a docstring, no imports) when it is missing;
2. rewrites every import that names a moved module, in memory_agent/, compaction/, tests/, bench/,
   examples/, tools/ and docs_hooks.py: `from .x import`, `from ..x import`, `from . import x`,
   `from memory_agent import x` (split per room when one statement names several), and the
   relative imports of the moved files themselves (their depth changed);
3. rewrites the dotted and slashed names in text: `memory_agent.x` (imports, mock.patch and
   monkeypatch targets, logger names, `::: memory_agent.x` in docs/api) and `memory_agent/x.py`,
   in the Python files above, Markdown under docs/, ARCHITECTURE.md, CONTRIBUTING.md,
   pyproject.toml, mkdocs.yml and .ci/; bare `x.py` (paths relative to the package) in the
   Markdown files and in the two tests that name modules by their path; `".x"` in the lazy table
   of memory_agent/__init__.py;
4. adds each room package (and memory_agent._old_paths, the compatibility finder) to the layer
   table of tests/unit/test_architecture.py at the lowest layer its modules sit in;
5. runs `ruff format` and `ruff check --fix` on the files it changed.

README.md is left alone (another branch rewrites it; old import paths keep working through
memory_agent/_old_paths.py). It prints the Python files that still mention a bare `x.py` of a
moved module, for a person to look at.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE = "memory_agent"

ROOMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "core": (
        "Core memory: blocks, their labels and `/memories` paths, and the blocks in the database.",
        ("blocks", "labels", "memory_paths", "core_memory"),
    ),
    "conversation": (
        "The conversation: recall memory (every message, and the summaries that replaced old "
        "ones), searching it, and compacting it on our storage.",
        ("recall", "compactor"),
    ),
    "prompt": (
        "What the model reads: the system prompt's memory sections, the per-turn context, and the "
        "names the prompt reserves for its own parts.",
        ("rendering", "turn_context", "reserved_names"),
    ),
    "privacy": (
        "Keeping memory private: sensitivity levels, secrets shown by their shape only, the "
        "encryption key, owner-only files.",
        ("sensitivity", "redaction", "encryption_key", "file_modes"),
    ),
    "maintenance": (
        "Looking after a storage dir: its agents (create, open, delete, re-encrypt) and `doctor`'s "
        "checks and repairs on SQLite and PostgreSQL.",
        ("admin", "health", "pg_health"),
    ),
    "integrations": (
        "memory-agent inside other frameworks' shapes: Anthropic's memory tool, the SDK's session "
        "store, the Agent College's three-agent session.",
        ("anthropic_memory", "session_store", "college"),
    ),
    "testing": ("", ("soak",)),  # exists already; its __init__ is left as it is
}

MOVES: dict[str, str] = {
    old: f"{room}.{old}" for room, (_, modules) in ROOMS.items() for old in modules
}
"""Old module name under memory_agent -> new one. Each keeps working at its old path through
memory_agent/_old_paths.py, whose table must be this one."""

UNRELEASED: dict[str, str] = {
    "conversation_search": "conversation.conversation_search",
    "message_vectors": "conversation.message_vectors",
    "time_phrases": "conversation.time_phrases",
    "recall_guard": "prompt.recall_guard",
}
"""Root modules other branches added this session (issues 24-25), moved when present. No release
ever had them at the root, so they get no old-path alias."""

KEPT_AT_ROOT = {
    "__init__",
    "_old_paths",
    "manager",
    "settings",
    "errors",
    "validation",
    "authors",
}
"""What stays at the root on purpose (docs/package-layout.md says why)."""

RENAMES = {**MOVES, **UNRELEASED}

PY_DIRS = ("memory_agent", "compaction", "tests", "bench", "examples", "tools")
PY_FILES = ("docs_hooks.py",)
TEXT_GLOBS = (
    "docs/**/*.md",
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "pyproject.toml",
    "mkdocs.yml",
    ".ci/*",
)
BARE_PATH_FILES = (
    "tests/unit/test_one_writer_per_table.py",
    "tests/unit/test_architecture.py",
)
"""Python files whose strings name modules by their path relative to the package."""

EXCLUDED = {
    "README.md",
    "memory_agent/_old_paths.py",
    "tests/unit/test_old_import_paths.py",
    "docs/package-layout.md",
    "tools/move_rooms.py",
}
"""Files that must keep naming the old paths (the compatibility layer, its test, the table)."""

_OLD = "|".join(sorted(RENAMES, key=len, reverse=True))
DOTTED = re.compile(rf"(?<![\w.]){PACKAGE}\.({_OLD})(?!\w)")
SLASHED = re.compile(rf"(?<![\w./\-]){PACKAGE}/({_OLD})\.py(?!\w)")
BARE = re.compile(rf"(?<![\w./\-])({_OLD})\.py(?!\w)")
LAZY = re.compile(rf"""(["'])\.({_OLD})\1""")


def _git(root: Path, *args: str) -> bool:
    return (
        subprocess.run(["git", *args], cwd=root, capture_output=True, check=False).returncode == 0
    )


def move_files(root: Path, dry_run: bool) -> dict[Path, str]:
    """Move what is still at the root; return {new path: old module name} of the files moved."""
    moved: dict[Path, str] = {}
    in_git = _git(root, "rev-parse", "--is-inside-work-tree")
    rooms = {room: list(modules) for room, (_, modules) in ROOMS.items()}
    for module, new in UNRELEASED.items():
        rooms[new.partition(".")[0]].append(module)
    for room, (doc, _) in ROOMS.items():
        modules = rooms[room]
        folder = root / PACKAGE / room
        init = folder / "__init__.py"
        if not init.exists() and doc:
            print(f"create {init.relative_to(root)}")
            if not dry_run:
                folder.mkdir(exist_ok=True)
                text = textwrap.fill(f'"""{doc}"""', width=96)
                init.write_text(f"{text}\n", encoding="utf-8")
                if in_git:
                    _git(root, "add", str(init.relative_to(root)))
        for module in modules:
            old = root / PACKAGE / f"{module}.py"
            new = folder / f"{module}.py"
            if old.exists() and new.exists():
                sys.exit(f"both {old} and {new} exist: merge them by hand, then run again")
            if not old.exists():
                continue
            print(f"move {old.relative_to(root)} -> {new.relative_to(root)}")
            if dry_run:
                continue
            if not (
                in_git and _git(root, "mv", str(old.relative_to(root)), str(new.relative_to(root)))
            ):
                shutil.move(str(old), str(new))
            moved[new] = f"{PACKAGE}.{module}"
    return moved


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, path: Path) -> list[str]:
    return module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]


def _new_name(module: str) -> str:
    """The new dotted name of a module or of anything inside one (`memory_agent.recall.X`)."""
    prefix = f"{PACKAGE}."
    if module.startswith(prefix):
        rest = module[len(prefix) :]
        head, _, tail = rest.partition(".")
        if head in RENAMES:
            return prefix + RENAMES[head] + (f".{tail}" if tail else "")
    return module


def _relative(package: list[str], target: list[str]) -> tuple[int, str]:
    common = 0
    while common < min(len(package), len(target)) and package[common] == target[common]:
        common += 1
    return len(package) - common + 1, ".".join(target[common:])


def _render(level: int, base: str, names: list[ast.alias], indent: str) -> str:
    where = "." * level + base
    parts = [a.name if a.asname is None else f"{a.name} as {a.asname}" for a in names]
    return f"{indent}from {where} import {', '.join(parts)}"


def rewrite_imports(source: str, module: str, old_module: str, path: Path) -> str:
    """Rewrite the `from ... import ...` statements of one file that a move touches."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    new_package = _package_of(module, path)
    old_package = _package_of(old_module, path)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = old_package[: len(old_package) - node.level + 1]
            absolute = ".".join(base + ([node.module] if node.module else []))
        else:
            absolute = node.module or ""
        if not (absolute == PACKAGE or absolute.startswith(f"{PACKAGE}.")):
            continue
        # Group the names by the module each now comes from (a moved module imported by name from
        # its old package comes from its room now).
        groups: dict[str, list[ast.alias]] = {}
        for alias in node.names:
            target = absolute
            if absolute == PACKAGE and alias.name in RENAMES:
                target = f"{PACKAGE}.{RENAMES[alias.name].rpartition('.')[0]}"
            groups.setdefault(_new_name(target), []).append(alias)
        first_line = lines[node.lineno - 1]
        indent = first_line[: len(first_line) - len(first_line.lstrip())]
        statements = []
        for target, names in groups.items():
            if node.level:
                level, base_name = _relative(new_package, target.split("."))
                statements.append(_render(level, base_name, names, indent))
            else:
                statements.append(_render(0, target, names, indent))
        original = ast.get_source_segment(source, node) or ""
        if len(statements) == 1 and _same(original, statements[0].strip()):
            continue
        edits.append(
            (
                node.lineno,
                node.col_offset,
                node.end_lineno or node.lineno,
                node.end_col_offset or 0,
                ("\n").join(s if i else s.strip() for i, s in enumerate(statements)),
            )
        )
    for lineno, col, end_lineno, end_col, text in sorted(edits, reverse=True):
        first = lines[lineno - 1]
        last = lines[end_lineno - 1]
        lines[lineno - 1 : end_lineno] = [first[:col] + text + last[end_col:]]
    return "".join(lines)


def _same(original: str, rendered: str) -> bool:
    def norm(text: str) -> str:
        return re.sub(r"[\s()]+|,(?=\s*\))", "", re.sub(r"#.*", "", text)).rstrip(",")

    return norm(original) == norm(rendered)


def rewrite_text(text: str, *, bare: bool, lazy: bool) -> str:
    text = DOTTED.sub(lambda m: f"{PACKAGE}.{RENAMES[m.group(1)]}", text)
    text = SLASHED.sub(lambda m: f"{PACKAGE}/{RENAMES[m.group(1)].replace('.', '/')}.py", text)
    if bare:
        text = BARE.sub(lambda m: f"{RENAMES[m.group(1)].replace('.', '/')}.py", text)
    if lazy:
        text = LAZY.sub(lambda m: f"{m.group(1)}.{RENAMES[m.group(2)]}{m.group(1)}", text)
    return text


def add_layer_entries(source: str) -> str:
    """Place each room package (and the compatibility finder) in the architecture test's table,
    at the layer of its lowest module: beside the table's first mention of one of them."""
    packages = [f"{PACKAGE}.{room}" for room in ROOMS] + [f"{PACKAGE}._old_paths"]
    for package in packages:
        if f'"{package}"' in source:
            continue
        anchor = f'"{PACKAGE}.errors"' if package.endswith("_old_paths") else f'"{package}.'
        at = source.find(anchor)
        if at >= 0:
            source = f'{source[:at]}"{package}", {source[at:]}'
    return source


def python_files(root: Path) -> list[Path]:
    found = [root / name for name in PY_FILES if (root / name).exists()]
    for folder in PY_DIRS:
        if (root / folder).is_dir():
            found += [p for p in sorted((root / folder).rglob("*.py")) if ".venv" not in p.parts]
    return [p for p in found if p.relative_to(root).as_posix() not in EXCLUDED]


def text_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for pattern in TEXT_GLOBS:
        found += [p for p in sorted(root.glob(pattern)) if p.is_file()]
    return [p for p in found if p.relative_to(root).as_posix() not in EXCLUDED]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="list the moves, change nothing")
    parser.add_argument("--no-ruff", action="store_true", help="do not run ruff afterwards")
    args = parser.parse_args()
    root = Path.cwd()
    if not (root / PACKAGE / "__init__.py").exists() or not (root / "pyproject.toml").exists():
        sys.exit("run this from the root of a memory-agent checkout")
    moved = move_files(root, args.dry_run)
    if args.dry_run:
        return
    changed: list[Path] = []
    for path in python_files(root):
        relative = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        text = source
        if relative.startswith(f"{PACKAGE}/") or relative.startswith("compaction/"):
            module = _module_name(root, path)
            old_module = moved.get(path, module)
        else:
            module = old_module = "__script__"  # not in a package: absolute imports only
        text = rewrite_imports(text, module, old_module, path)
        text = rewrite_text(
            text,
            bare=relative in BARE_PATH_FILES,
            lazy=relative == f"{PACKAGE}/__init__.py",
        )
        if relative == "tests/unit/test_architecture.py":
            text = add_layer_entries(text)
        if text != source:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for path in text_files(root):
        source = path.read_text(encoding="utf-8")
        text = rewrite_text(source, bare=path.suffix == ".md", lazy=False)
        if text != source:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for path in changed:
        print(f"rewrote {path.relative_to(root)}")
    python = [str(p.relative_to(root)) for p in changed if p.suffix == ".py"]
    python += [str(p.relative_to(root)) for p in moved]
    python += [
        str((root / PACKAGE / room / "__init__.py").relative_to(root))
        for room, (doc, _) in ROOMS.items()
        if doc
    ]
    if python and not args.no_ruff:
        ruff = [
            shutil.which("ruff") or sys.executable,
            *([] if shutil.which("ruff") else ["-m", "ruff"]),
        ]
        files = sorted(set(python))
        subprocess.run([*ruff, "format", "--quiet", *files], cwd=root, check=False)
        subprocess.run([*ruff, "check", "--fix", "--quiet", *files], cwd=root, check=False)
        subprocess.run([*ruff, "format", "--quiet", *files], cwd=root, check=False)
    leftovers = [
        f"{p.relative_to(root)}:{n}: {line.strip()}"
        for p in python_files(root)
        if p.relative_to(root).as_posix() not in BARE_PATH_FILES
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if BARE.search(line)
    ]
    loose = sorted(
        p.stem for p in (root / PACKAGE).glob("*.py") if p.stem not in KEPT_AT_ROOT | set(RENAMES)
    )
    if loose:
        print(f"\nModules at the package root no room table names (place them by hand): {loose}")
    if leftovers:
        print("\nPython lines naming a moved module by a bare file name (check by hand):")
        print("\n".join(leftovers))


if __name__ == "__main__":
    main()
