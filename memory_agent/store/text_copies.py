"""Copies of a forgotten text inside other rows, replaced in place by a mark.

Forgetting deletes the item itself; a row that merely quotes it (a tool result that showed a block,
a summary that repeated a passage, a transcript line of the SDK's session mirror) is kept with the
quoted text replaced by `FORGOTTEN_MARK`. A JSON column holds the text JSON-escaped, so it is
looked for in that form too (both with and without non-ASCII escaped). Each table's own module
calls `replace_text` for its columns; this holds only the SQL they share.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .protocol import Connection

__all__ = ["FORGOTTEN_MARK", "json_forms", "replace_text"]

FORGOTTEN_MARK = "[forgotten]"


def json_forms(text: str) -> tuple[str, ...]:
    """The ways `text` appears inside a JSON string value, the plain text first."""
    forms = [
        text,
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text, ensure_ascii=True)[1:-1],
    ]
    return tuple(dict.fromkeys(forms))


def replace_text(
    conn: Connection,
    table: str,
    column: str,
    texts: Sequence[str],
    *,
    json_column: bool = False,
    where: str = "",
    params: Sequence[object] = (),
) -> int:
    """Replace every occurrence of each text in `table.column` (rows also matching `where`, an
    `AND ...` clause) by the mark; returns how many row updates were made. `table`, `column` and
    `where` are the caller's own SQL, never user input."""
    changed = 0
    for text in texts:
        for form in json_forms(text) if json_column else (text,):
            cursor = conn.execute(
                f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?) > "
                f"0 {where}",
                (form, FORGOTTEN_MARK, form, *params),
            )
            changed += max(cursor.rowcount, 0)
    return changed
