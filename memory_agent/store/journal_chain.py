"""The journal's hash chain: each entry holds the hash of the one before, so an edit shows.

Why this shape: forgetting (see `memory_agent.forgetting`) must erase an entry's values yet leave
the chain verifiable. So the values are not hashed into the chain directly. Each entry gets a
random per-entry salt and a content digest, sha256(salt || canonical values); the chain hash
covers the previous hash, the entry's id, agent, action, target, author, time and that digest.
Forgetting erases the values and the salt and keeps the digest: the chain still verifies, and
without the salt nobody can confirm a guess of the forgotten text against the digest.

Only `store.journal.record` (and the migration that chained the entries written before) computes
these; `verify` walks the chain in entry order and names the first entry that does not match. A
forgotten mark is taken as genuine only as far as the forget records' counts of redacted entries
reach (those records are never redacted), so values erased by hand to look forgotten show too.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHAIN_COLUMNS",
    "ChainReport",
    "chain_hash",
    "content_digest",
    "new_salt",
    "verify",
]

CHAIN_COLUMNS = ("salt", "content_digest", "prev_hash", "entry_hash", "forgotten")
"""The columns the chain adds to `journal`."""

_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""The hashed JSON form, made once: `json.dumps` with these options builds an encoder per call,
which costs as much as the encoding itself (every journal entry encodes twice)."""


def new_salt() -> str:
    """16 random bytes, hex: the per-entry secret that makes the digest unguessable once erased."""
    return secrets.token_hex(16)


def content_digest(
    salt: str, label: str | None, old_value: str | None, new_value: str | None, detail: str
) -> str:
    """sha256(salt || canonical JSON of the values), hex; `detail` is the stored JSON text."""
    canonical = _CANONICAL.encode([label, old_value, new_value, detail])
    return hashlib.sha256(
        bytes.fromhex(salt) + canonical.encode("utf-8", "surrogatepass")
    ).hexdigest()


def chain_hash(
    prev_hash: str | None,
    entry_id: int,
    agent_id: str | None,
    action: str,
    target_type: str,
    target_id: str | None,
    author_kind: str | None,
    author: str | None,
    created_at: str,
    digest: str,
) -> str:
    """The entry's own hash: what it says happened (not its values) and the hash before it."""
    canonical = _CANONICAL.encode(
        [
            prev_hash or "",
            int(entry_id),
            agent_id,
            action,
            target_type,
            target_id,
            author_kind,
            author,
            created_at,
            digest,
        ]
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    """How a walk of the chain went: how many entries, and the first one that failed (None:
    intact)."""

    entries: int
    forgotten: int
    first_broken: int | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.first_broken is None


def _digest_of(row: Mapping[str, Any]) -> str | None:
    """The digest the row's values give now (None when they were forgotten: the stored one
    stands)."""
    if row["forgotten"]:
        return None
    if row["salt"] is None:
        return ""
    return content_digest(
        row["salt"], row["label"], row["old_value"], row["new_value"], row["detail"]
    )


def verify(rows: Iterable[Mapping[str, Any]]) -> ChainReport:
    """Walk journal rows in entry order; the first whose values, digest, link or hash is wrong
    breaks it.

    A forgotten entry must hold no values and no salt; its stored digest is taken as given (that is
    what forgetting keeps) and still has to fit the chain.
    """
    previous: str | None = None
    count = forgotten = accounted = 0
    newest_forgotten = 0
    for row in rows:
        count += 1
        entry = int(row["entry_id"])
        if row["action"] == "forget" and not row["forgotten"]:
            accounted += _redacted_count(row["detail"])
        if row["forgotten"]:
            newest_forgotten = entry
        if row["entry_hash"] is None or row["content_digest"] is None:
            return ChainReport(
                count, forgotten, entry, "it has no hash (written outside the journal's writer)"
            )
        if row["forgotten"]:
            forgotten += 1
            if (
                any(row[c] is not None for c in ("salt", "label", "old_value", "new_value"))
                or row["detail"] != "{}"
            ):
                return ChainReport(
                    count, forgotten, entry, "it is marked forgotten but still holds values"
                )
        else:
            if _digest_of(row) != row["content_digest"]:
                return ChainReport(
                    count, forgotten, entry, "its values do not match its digest (edited)"
                )
        if (row["prev_hash"] or None) != previous:
            return ChainReport(
                count,
                forgotten,
                entry,
                "it does not link to the entry before it "
                "(an entry was removed, inserted or reordered)",
            )
        expected = chain_hash(
            previous,
            entry,
            row["agent_id"],
            row["action"],
            row["target_type"],
            row["target_id"],
            row["author_kind"],
            row["author"],
            row["created_at"],
            row["content_digest"],
        )
        if expected != row["entry_hash"]:
            return ChainReport(
                count, forgotten, entry, "its hash does not match what it says happened (edited)"
            )
        previous = row["entry_hash"]
    if forgotten > accounted:
        return ChainReport(
            count,
            forgotten,
            newest_forgotten,
            f"{forgotten} entries are marked forgotten but the forget records account for "
            f"{accounted} "
            "(values erased outside forgetting)",
        )
    return ChainReport(count, forgotten)


def _redacted_count(detail: str | None) -> int:
    """How many entries a forget record says it redacted (its detail holds the counts)."""
    try:
        value = json.loads(detail or "{}").get("journal_entries_redacted", 0)
    except (ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) else 0
