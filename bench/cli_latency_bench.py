"""Cold-start latency of the `memory-agent` command: process start to exit, per command.

Every run is a new Python process, exactly as a user's shell starts the console script, on a
storage dir seeded with an agent, a few blocks, messages and passages. Commands are grouped by
what they must load: most only read or write SQLite (goal: under 1 s); `remember`, hybrid
`recall` and `import` embed text with the default model and write Chroma (goal: under 1.5 s).
`chat` is not timed here: it starts the SDK's CLI, a separate process (about 0.6 s on its own).

    python bench/cli_latency_bench.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ENTRY = [sys.executable, "-c", "from memory_agent.cli import main; main()"]
"""What the installed `memory-agent` script runs (without depending on the PATH)."""

QUICK = ("blocks list", "remember")
"""A quick run's commands: one that opens the store without embedding, and one that embeds."""


def commands(export_file: Path) -> list[tuple[str, str, list[str]]]:
    """(group, label, argv) for every timed command; '{n}' makes a text unique per run."""
    return [
        ("no embedding", "--help", ["--help"]),
        ("no embedding", "init", ["init"]),
        ("no embedding", "agents list", ["agents", "list"]),
        ("no embedding", "agents show", ["agents", "show"]),
        ("no embedding", "blocks list", ["blocks", "list"]),
        ("no embedding", "blocks show human", ["blocks", "show", "human"]),
        ("no embedding", "blocks set notes", ["blocks", "set", "notes", "note {n}"]),
        ("no embedding", "blocks append human", ["blocks", "append", "human", "fact {n}"]),
        ("no embedding", "blocks history human", ["blocks", "history", "human"]),
        ("no embedding", "messages", ["messages"]),
        ("no embedding", "messages --search", ["messages", "--search", "tea"]),
        ("no embedding", "summary", ["summary"]),
        ("no embedding", "compact (no key: refused)", ["compact"]),
        ("no embedding", "passages", ["passages"]),
        ("no embedding", "recall --mode keyword", ["recall", "Lisbon", "--mode", "keyword"]),
        ("no embedding", "export", ["export", "-o", str(export_file)]),
        ("vectors, no embedding", "forget", ["forget", "{passage}"]),
        ("vectors, no embedding", "doctor", ["doctor"]),
        ("embedding", "remember", ["remember", "Fact number {n}: Ada's boat needs paint."]),
        ("embedding", "recall (hybrid)", ["recall", "where does her sister live"]),
        (
            "embedding",
            "import (2 passages)",
            ["--storage-dir", "{fresh}", "import", str(export_file)],
        ),
    ]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one command in a new process."""
    cpu = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run([*ENTRY, *argv], env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 and not (
        argv == ["compact"] and "ANTHROPIC_API_KEY" in result.stderr
    ):
        raise SystemExit(
            f"memory-agent {' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}"
        )
    return elapsed, _children_cpu() - cpu


SEED_COMMANDS = [
    ["init", "--agent", "ada"],
    ["blocks", "set", "human", "Name: Ada. Sails a blue sloop called Petrel."],
    ["blocks", "create", "notes", "First note."],
    ["remember", "Ada's sister lives in Lisbon and teaches piano.", "--tag", "family"],
    ["remember", "The Petrel's mainsail was replaced in March 2024.", "--tag", "boat"],
]
"""What every timed command finds: an agent with blocks and two passages (with vectors)."""


def seed(env: dict[str, str]) -> None:
    """SEED_COMMANDS through the CLI's own entry, then 100 messages, all in one process: the seed
    is not timed, and a process per command cost a quick run more than the commands it times."""
    code = (
        "from memory_agent import MemoryManager\n"
        "from memory_agent.cli import cli\n"
        f"for argv in {SEED_COMMANDS!r}:\n"
        "    cli.main(argv, prog_name='memory-agent', standalone_mode=False)\n"
        "m = MemoryManager(agent_id='ada')\n"
        "for i in range(50):\n"
        "    m.store_message('user', f'message {i}: I like tea')\n"
        "    m.store_message('assistant', f'reply {i}: noted')\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)


def passage_to_forget(env: dict[str, str], n: int) -> str:
    out = subprocess.run(
        [*ENTRY, "--json", "remember", f"Disposable passage {n}."],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return str(json.loads(out)["id"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--quick", action="store_true", help=f"1 run of {len(QUICK)} commands")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as scratch:
        env = {
            **os.environ,
            "PERSIST_DIRECTORY": str(Path(scratch) / "store"),
            "HOME": scratch,
            "ANONYMIZED_TELEMETRY": "False",
            "PYTHONPATH": str(ROOT),
        }
        # PYTHONDONTWRITEBYTECODE (set on some CI machines) would recompile every module on every
        # start; a user's installed package has its bytecode cached.
        for name in (
            "AGENT_ID",
            "CHROMA_HOST",
            "MEMORY_HYBRID_SEARCH",
            "PYTHONDONTWRITEBYTECODE",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
        ):
            env.pop(name, None)
        seed(env)
        export_file = Path(scratch) / "export.json"
        chosen = [c for c in commands(export_file) if not args.quick or c[1] in QUICK]
        if any("import" in argv for _, _, argv in chosen):
            run(["export", "-o", str(export_file)], env)  # what `import` reads
        print(
            f"{runs} cold runs per command (new process each; wall seconds min / median / max, and "
            "the "
            f"median CPU seconds, user + system, which load from other processes inflates less)"
        )
        print(f"{'group':<24}{'command':<28}{'min':>7}{'median':>8}{'max':>7}{'cpu':>7}")
        for group, label, template in chosen:
            times, cpus = [], []
            for n in range(runs):
                fields = {"n": str(n), "fresh": str(Path(scratch) / f"fresh{n}")}
                if "{passage}" in template:
                    fields["passage"] = passage_to_forget(env, n)
                wall, cpu = run([part.format(**fields) for part in template], env)
                times.append(wall)
                cpus.append(cpu)
            print(
                f"{group:<24}{label:<28}{min(times):7.2f}{statistics.median(times):8.2f}{max(times):7.2f}"
                f"{statistics.median(cpus):7.2f}"
            )
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
