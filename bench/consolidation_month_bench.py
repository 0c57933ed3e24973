"""A simulated month of memory with consolidation running through it, and appends racing
consolidation.

1. **The month.** One agent; `--writers` processes (forked from one launcher,
   `memory_agent.testing.forked`) write to it at once, day after day
   (`--days`, `--ops` writes per writer and day): new facts as archival passages, exact
   duplicates (the same words, other spacing and case), near duplicates (the same fact said
   otherwise), contradictions (the same person's new city, to supersede the old), notes that
   expire (most within seconds, the rest in a month) and facts appended to the `human` block,
   whose limit the month overflows. While the writers write, the main process runs a
   consolidation each day (the rules consolidator, or with `--model` the model consolidator
   against a scripted server whose "model" answers from the request). Every fact carries a
   unique marker, so the end can check each one.

   Printed: facts lost (must be 0: each fact's marker is in a block, a live passage, or a
   superseded passage whose successor chain ends in a live one), duplicates left (live passages
   beyond one per fact), the `human` block's size each day and the appends it refused, time and
   tokens per run, and rollback exactness: on some days, with the writers paused, a run is made
   and rolled back, and the agent's blocks and passages are compared with a snapshot taken
   before it, byte for byte.

2. **Appends racing consolidation.** Four writer processes (as the block's agent; a shared block
   is never trimmed, its lines would leave the other agents' reach) append to one block while the
   main process consolidates its owner in a loop (the block's limit is small, so runs move its
   overflow to archival passages and meet newer versions); afterwards every append must be in
   the block or in a passage it was moved to. On SQLite and on PostgreSQL (a throwaway local
   cluster, `memory_agent.testing.PostgresCluster`, unless --database-url names a server).

    python bench/consolidation_month_bench.py [--quick] [--days 30] [--writers 3] [--ops 40]
                                              [--appends 150] [--backends sqlite postgres] [--model]

On a shared machine the times move with the load: say so next to them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction import CompactionSettings  # noqa: E402
from memory_agent import BlockLimitExceededError, MemoryManager, Settings  # noqa: E402
from memory_agent.consolidation import ModelConsolidator, RulesConsolidator  # noqa: E402
from memory_agent.testing import ScriptedMessagesServer, text_response  # noqa: E402
from memory_agent.testing.forked import start_forked  # noqa: E402
from memory_agent.testing.postgres_cluster import PostgresCluster  # noqa: E402
from memory_agent.testing.recorded import RecordedRequest  # noqa: E402
from memory_agent.testing.responses import ScriptedResponse  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")
WRITER_PRELOAD = ("chromadb", "chromadb.api.rust", "onnxruntime", "tokenizers")
"""What a month writer imports at its first archival write: the launcher imports it once."""
AGENT = "month"
HUMAN_LIMIT = 2_000
MARKER = re.compile(r"\[([FBN]\d+-\d{5})\]")
PEOPLE = (
    "Ines Duarte",
    "Rui Costa",
    "Marta Silva",
    "Joao Pereira",
    "Ana Sousa",
    "Tiago Ramos",
    "Sofia Lima",
    "Pedro Alves",
    "Carla Nunes",
    "Luis Moreira",
    "Beatriz Rocha",
    "Miguel Teixeira",
)
CITIES = (
    "Lisbon",
    "Porto",
    "Braga",
    "Coimbra",
    "Faro",
    "Aveiro",
    "Evora",
    "Setubal",
    "Viseu",
    "Leiria",
)
THINGS = (
    "a green bicycle",
    "two cats",
    "a sailing boat",
    "an old piano",
    "a vegetable garden",
    "a collection of maps",
    "a red scooter",
    "a beehive",
    "a telescope",
    "a pottery wheel",
)
HOBBIES = (
    "rowing",
    "chess",
    "birdwatching",
    "surfing",
    "baking bread",
    "restoring radios",
    "fado singing",
)


# ----- the writers' script --------------------------------------------------------------------


@dataclass
class Ledger:
    """What one writer wrote: each fact's marker and kind, and the notes meant to expire."""

    facts: dict[str, str] = field(default_factory=dict)
    expiring: list[tuple[str, str]] = field(default_factory=list)
    """(marker, expires_at) of notes written to expire."""
    refused_appends: int = 0
    writes: int = 0
    kinds: Counter[str] = field(default_factory=Counter)


class Script:
    """One writer's writes: facts it can repeat, paraphrase and contradict later."""

    def __init__(self, writer: int, seed: int) -> None:
        self.writer = writer
        self.rng = random.Random(seed * 1000 + writer)
        self.number = 0
        self.said: list[tuple[str, str, str, str]] = []
        """(marker, person, attribute kind, value) of the facts written so far."""

    def marker(self, kind: str) -> str:
        self.number += 1
        return f"{kind}{self.writer}-{self.number:05d}"

    def new_fact(self) -> tuple[str, str]:
        rng = self.rng
        person, kind = rng.choice(PEOPLE), rng.choice(("city", "thing", "hobby"))
        value = rng.choice({"city": CITIES, "thing": THINGS, "hobby": HOBBIES}[kind])
        marker = self.marker("F")
        self.said.append((marker, person, kind, value))
        return marker, _fact_text(marker, person, kind, value)

    def duplicate(self) -> tuple[str, str] | None:
        if not self.said:
            return None
        marker, person, kind, value = self.rng.choice(self.said)
        text = _fact_text(marker, person, kind, value)
        return marker, "  " + text.replace(" ", "  ", 2).lower().replace(
            f"[{marker.lower()}]", f"[{marker}]"
        )

    def near_duplicate(self) -> tuple[str, str] | None:
        if not self.said:
            return None
        marker, person, kind, value = self.rng.choice(self.said)
        return marker, _paraphrase(marker, person, kind, value)

    def contradiction(self) -> tuple[str, str] | None:
        cities = [entry for entry in self.said if entry[2] == "city"]
        if not cities:
            return None
        _, person, _, old_city = self.rng.choice(cities)
        new_city = self.rng.choice([c for c in CITIES if c != old_city])
        marker = self.marker("F")
        self.said.append((marker, person, "city", new_city))
        return (
            marker,
            f"[{marker}] {person} moved from {old_city} to {new_city} and lives in {new_city} now.",
        )

    def note(self) -> tuple[str, str]:
        marker = self.marker("N")
        return (
            marker,
            f"[{marker}] Reminder: the ferry to {self.rng.choice(CITIES)} leaves from berth "
            f"{self.rng.randint(1, 20)} tomorrow at {self.rng.randint(6, 22)}:00.",
        )

    def block_line(self) -> tuple[str, str]:
        marker = self.marker("B")
        person = self.rng.choice(PEOPLE)
        return marker, f"[{marker}] {person} likes {self.rng.choice(HOBBIES)}."


def _fact_text(marker: str, person: str, kind: str, value: str) -> str:
    if kind == "city":
        return f"[{marker}] {person} lives in {value}."
    if kind == "thing":
        return f"[{marker}] {person} owns {value}."
    return f"[{marker}] {person} spends weekends {value}."


def _paraphrase(marker: str, person: str, kind: str, value: str) -> str:
    if kind == "city":
        return f"[{marker}] {person}'s home is in {value}."
    if kind == "thing":
        return f"[{marker}] {person} has {value} at home."
    return f"[{marker}] On weekends {person} goes {value}."


def _settings(storage: str) -> Settings:
    environ = {"PERSIST_DIRECTORY": storage}
    if os.environ.get("MEMORY_DATABASE_URL"):
        environ["MEMORY_DATABASE_URL"] = os.environ["MEMORY_DATABASE_URL"]
    return Settings.from_env(environ, env_file=None)


def _month_writer(
    storage: str,
    writer: int,
    days: int,
    ops: int,
    short_ttl_s: float,
    seed: int,
    day_start: Barrier,
    day_end: Barrier,
    results: Queue[str],
) -> None:
    """One process's month: at each day's start it writes `ops` times, then waits for the day's
    end."""
    script = Script(writer, seed)
    ledger = Ledger()
    with MemoryManager(agent_id=AGENT, settings=_settings(storage)) as memory:
        for _ in range(days):
            day_start.wait(timeout=600)
            for _ in range(ops):
                _one_write(memory, script, ledger, short_ttl_s)
            day_end.wait(timeout=600)
    results.put(
        json.dumps(
            {
                "facts": ledger.facts,
                "expiring": ledger.expiring,
                "refused_appends": ledger.refused_appends,
                "writes": ledger.writes,
                "kinds": dict(ledger.kinds),
            }
        )
    )


def _one_write(memory: MemoryManager, script: Script, ledger: Ledger, short_ttl_s: float) -> None:
    roll = script.rng.random()
    choice: tuple[str, str] | None
    if roll < 0.40:
        kind, choice = "fact", script.new_fact()
    elif roll < 0.50:
        kind, choice = "duplicate", script.duplicate()
    elif roll < 0.62:
        kind, choice = "near_duplicate", script.near_duplicate()
    elif roll < 0.70:
        kind, choice = "contradiction", script.contradiction()
    elif roll < 0.82:
        kind, choice = "note", script.note()
    else:
        kind, choice = "block", script.block_line()
    if choice is None:
        kind, choice = "fact", script.new_fact()
    marker, text = choice
    if kind == "block":
        try:
            memory.core_memory_append("human", text)
        except BlockLimitExceededError:
            ledger.refused_appends += 1  # not written: not a fact to keep
            return
    elif kind == "note":
        short = script.rng.random() < 0.7
        expires = datetime.now(timezone.utc) + (
            timedelta(seconds=short_ttl_s) if short else timedelta(days=30)
        )
        memory.archival_memory_insert(text, ["note"], agent_id=AGENT, expires_at=expires)
        ledger.expiring.append((marker, expires.isoformat()))
        ledger.writes += 1
        ledger.kinds[kind] += 1
        return
    else:
        memory.archival_memory_insert(text, [kind], agent_id=AGENT)
    ledger.facts[marker] = (
        kind if kind != "duplicate" and kind != "near_duplicate" else ledger.facts.get(marker, kind)
    )
    ledger.writes += 1
    ledger.kinds[kind] += 1


# ----- the stand-in model ---------------------------------------------------------------------

CHEAP_MODEL = "claude-haiku-4-5"
_MOVED = re.compile(r"\] (.+?) moved from (\w+) to (\w+)")


def oracle_model(request: RecordedRequest) -> ScriptedResponse | None:
    """Answers the model consolidator's three questions from the request, as a careful model
    would for this script's facts: a rewrite keeps the newest distinct lines that fit, a merge
    keeps the oldest wording of each group, and a pair contradicts when the newer note says the
    older one's person moved away from the older one's city."""
    system, text = request.system_text, request.last_user_text
    if "memory block" in system and "Block text: " in text:
        limit = int(re.search(r"At most (\d+) characters", text).group(1))  # type: ignore[union-attr]  # asked
        lines = list(
            dict.fromkeys(
                line
                for line in json.loads(text.split("Block text: ", 1)[1]).split("\n")
                if line.strip()
            )
        )
        kept: list[str] = []
        while lines and len("\n".join([lines[-1], *kept])) <= limit:
            kept.insert(0, lines.pop())
        return text_response(json.dumps({"text": "\n".join(kept)}))
    if "merge duplicate notes" in system:
        groups = [
            json.loads(line.split(": ", 1)[1])
            for line in text.splitlines()
            if line.startswith("Group ")
        ]
        return text_response(json.dumps({"merged": [group[0] for group in groups]}))
    if "facts that changed" in system:
        contradicting = []
        for line in text.splitlines():
            if not line.startswith("Pair "):
                continue
            number, pair = line[5:].split(": ", 1)
            older, newer = json.loads(pair)
            moved = _MOVED.search(newer)
            if (
                moved
                and moved.group(1) in older
                and moved.group(2) in older
                and moved.group(3) not in older
            ):
                contradicting.append(int(number))
        return text_response(json.dumps({"contradictions": contradicting}))
    return None


# ----- reading the store ----------------------------------------------------------------------


@dataclass(frozen=True)
class StoredPassage:
    passage_id: str
    content: str
    superseded_by: str | None
    expires_at: str | None


def _passages(memory: MemoryManager, agent_id: str) -> dict[str, StoredPassage]:
    with memory.database.reading() as conn:
        rows = conn.execute(
            "SELECT passage_id, content, superseded_by, expires_at FROM passages WHERE agent_id = "
            "?",
            (agent_id,),
        ).fetchall()
    return {row[0]: StoredPassage(str(row[0]), str(row[1]), row[2], row[3]) for row in rows}


def _memory_image(memory: MemoryManager, agent_id: str) -> dict[str, Any]:
    """The agent's blocks and passages as stored, for rollback's byte-for-byte comparison: each
    block's value, limit and flags, each passage's every column but bookkeeping of access."""
    with memory.database.reading() as conn:
        blocks = conn.execute(
            "SELECT b.block_id, ab.label, b.value, b.char_limit, b.read_only, b.is_shared FROM "
            "agent_blocks ab"
            " JOIN blocks b USING (block_id) WHERE ab.agent_id = ? ORDER BY b.block_id",
            (agent_id,),
        ).fetchall()
        passages = conn.execute(
            "SELECT * FROM passages WHERE agent_id = ? ORDER BY passage_id", (agent_id,)
        ).fetchall()
        names = [column[0] for column in conn.execute("SELECT * FROM passages LIMIT 0").description]
        tags = conn.execute(
            "SELECT p.passage_id, t.tag FROM passage_tags t JOIN passages p USING (passage_rowid)"
            " WHERE p.agent_id = ? ORDER BY p.passage_id, t.tag",
            (agent_id,),
        ).fetchall()
    skip = {"access_count", "last_accessed_at"}
    return {
        "blocks": [tuple(row) for row in blocks],
        "passages": [
            tuple(value for name, value in zip(names, row) if name not in skip) for row in passages
        ],
        "tags": [tuple(row) for row in tags],
    }


def _image_bytes(image: dict[str, Any]) -> bytes:
    return json.dumps(image, sort_keys=True, default=str, ensure_ascii=False).encode()


@dataclass
class FactCheck:
    lost: list[str]
    in_block: int
    live: int
    only_superseded: int
    duplicates_left: int
    cross_fact_supersessions: int


def check_facts(memory: MemoryManager, facts: dict[str, str]) -> FactCheck:
    """Where each fact is now (see the module docstring)."""
    passages = _passages(memory, AGENT)
    block_text = "\n".join(block.value for block in memory.list_blocks(agent_id=AGENT))
    by_marker: dict[str, list[StoredPassage]] = {}
    for passage in passages.values():
        for marker in set(MARKER.findall(passage.content)):
            by_marker.setdefault(marker, []).append(passage)

    def reaches_live(passage: StoredPassage) -> bool:
        seen: set[str] = set()
        while passage.superseded_by is not None and passage.passage_id not in seen:
            seen.add(passage.passage_id)
            successor = passages.get(passage.superseded_by)
            if successor is None:
                return False
            passage = successor
        return passage.superseded_by is None

    lost: list[str] = []
    in_block = live = only_superseded = duplicates = 0
    for marker in facts:
        holders = by_marker.get(marker, [])
        live_holders = [p for p in holders if p.superseded_by is None]
        duplicates += max(0, len(live_holders) - 1)
        if f"[{marker}]" in block_text:
            in_block += 1
        elif live_holders:
            live += 1
        elif any(reaches_live(p) for p in holders):
            only_superseded += 1
        else:
            lost.append(marker)
    cross = 0
    for passage in passages.values():
        if passage.superseded_by and passage.superseded_by in passages:
            old = set(MARKER.findall(passage.content))
            new = set(MARKER.findall(passages[passage.superseded_by].content))
            cross += bool(old and new and not old & new)
    return FactCheck(lost, in_block, live, only_superseded, duplicates, cross)


# ----- part 1: the month ----------------------------------------------------------------------


@dataclass
class RunFigure:
    day: int
    seconds: float
    status: str
    input_tokens: int
    output_tokens: int
    counts: dict[str, int]
    retry_later: int


@dataclass
class MonthResult:
    writes: int
    kinds: Counter[str]
    facts: int
    check: FactCheck
    runs: list[RunFigure]
    block_sizes: list[int]
    refused_appends: int
    rollbacks: list[tuple[int, bool, int]]
    """(day, restored byte for byte, changes the rolled-back run had made)."""
    expired_found: int
    expired_checked: int


def run_month(
    days: int,
    writers: int,
    ops: int,
    *,
    consolidator: Any,
    rollback_every: int,
    every: int = 1,
    seed: int = 7,
    short_ttl_s: float = 2.0,
) -> MonthResult:
    with tempfile.TemporaryDirectory() as storage:
        with MemoryManager(agent_id=AGENT, settings=_settings(storage)) as memory:
            memory.update_block("human", value="", limit=HUMAN_LIMIT)
            day_start, day_end, results = (
                SPAWN.Barrier(writers + 1),
                SPAWN.Barrier(writers + 1),
                SPAWN.Queue(),
            )
            # One launcher forks the writers: each would import the package, Chroma and
            # onnxruntime otherwise (memory_agent.testing.forked).
            launcher = start_forked(
                _month_writer,
                [
                    (storage, w, days, ops, short_ttl_s, seed, day_start, day_end, results)
                    for w in range(writers)
                ],
                preload=WRITER_PRELOAD,
            )
            runs: list[RunFigure] = []
            sizes: list[int] = []
            rollbacks: list[tuple[int, bool, int]] = []
            try:
                for day in range(1, days + 1):
                    day_start.wait(timeout=600)
                    if day % every == 0:
                        time.sleep(0.05)  # the writers are under way
                        runs.append(_timed_run(memory, consolidator, day))
                    day_end.wait(timeout=600)
                    sizes.append(len(memory.get_block("human", agent_id=AGENT).value))
                    print(
                        f"    day {day}: {len(_passages(memory, AGENT))} passages, human block "
                        f"{sizes[-1]} chars"
                        + (f", run {runs[-1].seconds:.1f} s" if day % every == 0 else ""),
                        file=sys.stderr,
                        flush=True,
                    )
                    if rollback_every and day % rollback_every == 0:
                        rollbacks.append(_rollback_check(memory, consolidator, day))
                collected = [json.loads(results.get(timeout=600)) for _ in range(writers)]
            except BaseException:
                day_start.abort()  # the writers stop waiting for a day that will not come
                day_end.abort()
                raise
            finally:
                launcher.join(timeout=120)
                if launcher.is_alive():
                    launcher.terminate()
            if launcher.exitcode != 0:
                raise RuntimeError(f"a writer failed (launcher exit code {launcher.exitcode})")
            time.sleep(short_ttl_s)
            runs.append(_timed_run(memory, consolidator, days + 1))  # a last run after the month
            facts = {
                marker: kind for ledger in collected for marker, kind in ledger["facts"].items()
            }
            check = check_facts(memory, facts)
            expired_found, expired_checked = _expired_in_search(memory, collected)
    kinds: Counter[str] = Counter()
    for ledger in collected:
        kinds.update(ledger["kinds"])
    return MonthResult(
        writes=sum(ledger["writes"] for ledger in collected),
        kinds=kinds,
        facts=len(facts),
        check=check,
        runs=runs,
        block_sizes=sizes,
        refused_appends=sum(ledger["refused_appends"] for ledger in collected),
        rollbacks=rollbacks,
        expired_found=expired_found,
        expired_checked=expired_checked,
    )


def _timed_run(memory: MemoryManager, consolidator: Any, day: int) -> RunFigure:
    began = time.perf_counter()
    report = memory.consolidate(agent_id=AGENT, consolidator=consolidator)
    seconds = time.perf_counter() - began
    return RunFigure(
        day,
        seconds,
        report.status,
        report.input_tokens or 0,
        report.output_tokens or 0,
        dict(report.counts),
        len(report.retry_later),
    )


def _rollback_check(memory: MemoryManager, consolidator: Any, day: int) -> tuple[int, bool, int]:
    """With the writers paused: snapshot, consolidate, roll back, compare."""
    before = _image_bytes(_memory_image(memory, AGENT))
    report = memory.consolidate(agent_id=AGENT, consolidator=consolidator)
    if report.status != "completed" or not report.session_id:
        raise RuntimeError(f"the rollback check's run did not complete: {report}")
    memory.rollback_consolidation(report.session_id)
    after = _image_bytes(_memory_image(memory, AGENT))
    return day, before == after, len(report.changes)


def _expired_in_search(memory: MemoryManager, ledgers: list[dict[str, Any]]) -> tuple[int, int]:
    """Expired notes a search returns (must be 0), out of how many expired notes were searched
    for."""
    now = datetime.now(timezone.utc)
    expired = [
        marker
        for ledger in ledgers
        for marker, when in ledger["expiring"]
        if datetime.fromisoformat(when) <= now
    ]
    sample = expired[:: max(1, len(expired) // 40)]
    found = 0
    for marker in sample:
        hits = memory.archival_memory_search(f"[{marker}] Reminder ferry berth", 10, agent_id=AGENT)
        found += any(f"[{marker}]" in hit.content for hit in hits)
    return found, len(sample)


# ----- part 2: appends racing consolidation ---------------------------------------------------

SHARED = "board"
OWNER = "owner"


def _appender(
    storage: str, writer: str, appends: int, start: Barrier, done: Queue[tuple[str, int]]
) -> None:
    with MemoryManager(agent_id=OWNER, settings=_settings(storage)) as memory:
        start.wait(timeout=600)
        refusals = 0
        deadline = time.monotonic() + 600
        for number in range(appends):
            while True:
                try:
                    memory.core_memory_append(SHARED, f"{writer}:{number:05d}")
                    break
                except BlockLimitExceededError:
                    refusals += 1  # full until the next consolidation moves text out: wait for it
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        done.put((writer, refusals))


@dataclass
class RaceResult:
    appends: int
    missing: int
    duplicated: int
    runs: int
    runs_changed: int
    retry_later: int
    refusals: int
    wall_s: float


def run_race(writers: int, appends: int, limit: int, consolidator: Any) -> RaceResult:
    with tempfile.TemporaryDirectory() as storage:
        with MemoryManager(agent_id=OWNER, settings=_settings(storage)) as memory:
            memory.create_block(SHARED, "", limit=limit)
            start, done = SPAWN.Barrier(writers + 1), SPAWN.Queue()
            names = [f"w{n}" for n in range(writers)]
            launcher = start_forked(
                _appender, [(storage, name, appends, start, done) for name in names]
            )
            start.wait(timeout=600)
            began = time.monotonic()
            finished: list[tuple[str, int]] = []
            runs = changed = retry = 0
            while len(finished) < writers:
                report = memory.consolidate(agent_id=OWNER, consolidator=consolidator)
                if report.status == "failed":
                    raise RuntimeError(f"a consolidation failed: {report.failure}")
                runs += 1
                changed += bool(report.changes)
                retry += len(report.retry_later)
                while not done.empty():
                    finished.append(done.get())
                if len(finished) < writers and not launcher.is_alive():
                    time.sleep(0.5)  # the queue's feeder may still be flushing the last report
                    while not done.empty():
                        finished.append(done.get())
                    if len(finished) < writers:
                        raise RuntimeError("an appender died before finishing")
            wall = time.monotonic() - began
            launcher.join(timeout=120)
            if launcher.exitcode != 0:
                raise RuntimeError(f"an appender failed (launcher exit code {launcher.exitcode})")
            text = (
                memory.get_block(SHARED, agent_id=OWNER).value
                + "\n"
                + "\n".join(
                    p.content for p in _passages(memory, OWNER).values() if p.superseded_by is None
                )
            )
    expected = [f"{name}:{number:05d}" for name in names for number in range(appends)]
    found = Counter(re.findall(r"w\d+:\d{5}", text))
    return RaceResult(
        appends=len(expected),
        missing=sum(1 for entry in expected if not found[entry]),
        duplicated=sum(1 for entry in expected if found[entry] > 1),
        runs=runs,
        runs_changed=changed,
        retry_later=retry,
        refusals=sum(r for _, r in finished),
        wall_s=wall,
    )


# ----- printing -------------------------------------------------------------------------------


def print_month(result: MonthResult, label: str) -> None:
    check = result.check
    print(
        f"month ({label}): {result.writes} writes "
        f"({', '.join(f'{k} {v}' for k, v in sorted(result.kinds.items()))})"
    )
    print(
        f"  facts written {result.facts}: lost {len(check.lost)}; in a block {check.in_block}, in "
        "a "
        "live passage "
        f"{check.live}, only through a superseded passage's successor {check.only_superseded}"
    )
    if check.lost:
        print(f"  LOST: {', '.join(check.lost[:20])}")
    print(
        f"  duplicates left (live passages beyond one per fact): {check.duplicates_left}; "
        f"supersessions across different facts: {check.cross_fact_supersessions}"
    )
    sizes = result.block_sizes
    step = max(1, len(sizes) // 10)
    print(
        f"  human block chars by day (limit {HUMAN_LIMIT}): "
        + " ".join(f"d{day}:{size}" for day, size in list(enumerate(sizes, start=1))[::step])
        + f"; max {max(sizes)}; appends refused (block full) {result.refused_appends}"
    )
    seconds = [run.seconds for run in result.runs]
    totals: Counter[str] = Counter()
    for run in result.runs:
        totals.update(run.counts)
    statuses = Counter(run.status for run in result.runs)
    tokens_in = statistics.mean(run.input_tokens for run in result.runs)
    tokens_out = statistics.mean(run.output_tokens for run in result.runs)
    print(
        f"  runs {len(result.runs)} ({dict(statuses)}): seconds p50 "
        f"{statistics.median(seconds):.2f} max "
        f"{max(seconds):.2f}; tokens per run in/out mean {tokens_in:.0f} / {tokens_out:.0f}; "
        "changes retried "
        f"later {sum(run.retry_later for run in result.runs)}"
    )
    print(f"  totals over the runs: {', '.join(f'{k} {v}' for k, v in sorted(totals.items()))}")
    exact = sum(ok for _, ok, _ in result.rollbacks)
    print(
        f"  rollbacks restored byte for byte: {exact}/{len(result.rollbacks)} "
        f"(changes rolled back: {[n for _, _, n in result.rollbacks]})"
    )
    print(
        f"  expired notes returned by search: {result.expired_found} of {result.expired_checked} "
        "searched",
        flush=True,
    )


@contextmanager
def backend_environment(url: str | None) -> Iterator[None]:
    before = os.environ.pop("MEMORY_DATABASE_URL", None)
    if url:
        os.environ["MEMORY_DATABASE_URL"] = url
    try:
        yield
    finally:
        os.environ.pop("MEMORY_DATABASE_URL", None)
        if before is not None:
            os.environ["MEMORY_DATABASE_URL"] = before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 2 days, 2 writers, 10 writes each a day, notes living 0.5 s, a race "
        "of 2 writers",
    )
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--writers", type=int, default=3, help="writer processes in the month")
    parser.add_argument("--ops", type=int, default=40, help="writes per writer and day")
    parser.add_argument(
        "--every", type=int, default=3, help="a consolidation every N days, during the writes"
    )
    parser.add_argument(
        "--model-days", type=int, help="days of the model consolidator's month (default: --days)"
    )
    parser.add_argument(
        "--rollback-every", type=int, default=10, help="a rollback check every N days (0: none)"
    )
    parser.add_argument(
        "--short-ttl",
        type=float,
        default=2.0,
        help="seconds a short-lived note lives; the month waits this long before its last run",
    )
    parser.add_argument("--appends", type=int, default=150, help="appends per writer in the race")
    parser.add_argument("--race-writers", type=int, default=4)
    parser.add_argument("--race-limit", type=int, default=1_500, help="the raced block's limit")
    parser.add_argument(
        "--backends", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"]
    )
    parser.add_argument(
        "--month-backends", nargs="+", default=["sqlite"], choices=["sqlite", "postgres"]
    )
    parser.add_argument(
        "--consolidators",
        nargs="+",
        default=["rules", "model"],
        choices=["rules", "model"],
        help="the month with each: the rules, and the model consolidator against a scripted "
        "stand-in that answers from the request (the race uses the first)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["month", "race"],
        choices=["month", "race"],
        help="which parts to run (default both)",
    )
    parser.add_argument(
        "--database-url", help="a PostgreSQL server to use instead of a throwaway cluster"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.days, args.writers, args.ops, args.rollback_every, args.appends, args.race_limit = (
            2,
            2,
            10,
            2,
            20,
            300,
        )
        args.every, args.model_days, args.race_writers, args.short_ttl = 1, None, 2, 0.5
    model_server = (
        ScriptedMessagesServer(responder=oracle_model).start()
        if "model" in args.consolidators
        else None
    )
    consolidators: dict[str, Any] = {}
    for name in args.consolidators:
        if name == "rules":
            consolidators[name] = RulesConsolidator()
        else:
            assert model_server is not None
            settings = CompactionSettings(
                model=CHEAP_MODEL, retry_initial_wait=0.01, retry_max_wait=0.05
            )
            consolidators[name] = ModelConsolidator(
                settings, api_key="bench-key", base_url=model_server.url
            )

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the cluster
    wanted = (set(args.backends) if "race" in args.parts else set()) | (
        set(args.month_backends) if "month" in args.parts else set()
    )
    cluster = PostgresCluster().start() if "postgres" in wanted and not args.database_url else None
    failed = False
    try:

        def url(backend: str) -> str | None:
            if backend == "sqlite":
                return None
            return args.database_url or (cluster.database_url("bench") if cluster else None)

        for name, consolidator in consolidators.items():
            if "month" not in args.parts:
                break
            days = args.model_days if name == "model" and args.model_days else args.days
            for backend in args.month_backends:
                with backend_environment(url(backend)):
                    month = run_month(
                        days,
                        args.writers,
                        args.ops,
                        consolidator=consolidator,
                        rollback_every=args.rollback_every,
                        every=args.every,
                        short_ttl_s=args.short_ttl,
                    )
                print_month(
                    month,
                    f"{backend}, {days} days, {args.writers} writer processes, a run every "
                    f"{args.every} day(s), {consolidator.name} consolidator",
                )
                failed |= (
                    bool(month.check.lost)
                    or not all(ok for _, ok, _ in month.rollbacks)
                    or month.expired_found > 0
                )
        race_consolidator = next(iter(consolidators.values()))
        for backend in args.backends if "race" in args.parts else ():
            with backend_environment(url(backend)):
                race = run_race(args.race_writers, args.appends, args.race_limit, race_consolidator)
            print(
                f"race ({backend}, {race_consolidator.name}): {args.race_writers} writers x "
                f"{args.appends} "
                f"appends to one block "
                f"(limit {args.race_limit}) while consolidating in a loop: missing {race.missing}, "
                "duplicated "
                f"{race.duplicated} of {race.appends}; runs {race.runs} ({race.runs_changed} "
                "changed it, "
                f"{race.retry_later} changes met a newer version); appends refused while full "
                f"{race.refusals}; "
                f"{race.wall_s:.1f} s",
                flush=True,
            )
            failed |= race.missing > 0
    finally:
        if cluster is not None:
            cluster.stop()
        if model_server is not None:
            model_server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
