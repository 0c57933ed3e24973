"""What Anthropic's memory tool costs on a large memory: each command, and the rendered prompt.

An agent with N blocks under nested `/memories` directories (a quarter in the prompt, the rest on
demand, values of about 1 KB) on a real SQLite file. Printed: the median time of each command
(`view` of the root and of a file, `create` + `delete`, `str_replace`, `insert`, `rename` of a
directory of 20 files and back), of rendering the system prompt, and the prompt's size with the
on-demand blocks listed against all of them rendered. No goal in the issue; figures for
docs/benchmarks.md.

Run: python bench/memory_tool_bench.py [--blocks 2000] [--repeats 30]   (--quick: 200 blocks, 10)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_agent import MemoryManager, MemoryToolError, Settings
from memory_agent.tools.memory_tool import MemoryFiles


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def seed(memory: MemoryManager, blocks: int) -> None:
    with memory.db.transaction():
        for number in range(blocks):
            label = f"area{number % 10}/topic{number % 7}/note{number}.md"
            memory.create_block(
                label, f"Note {number}: " + "fact. " * 170, limit=5000, in_prompt=number % 4 == 0
            )
        for number in range(20):
            memory.create_block(f"moving/file{number}.md", "x", in_prompt=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="200 blocks, 10 repeats")
    args = parser.parse_args()
    blocks, repeats = (200, 10) if args.quick else (args.blocks, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env({"PERSIST_DIRECTORY": str(Path(tmp) / "store")}, env_file=None)
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            seed(memory, blocks)
            files = MemoryFiles(memory)
            path = "/memories/area1/topic1/note1.md"
            counter = iter(range(10**9))

            def create_delete() -> None:
                name = f"/memories/tmp/n{next(counter)}.md"
                files.create(name, "temporary")
                files.delete(name)

            def rename_there_and_back() -> None:
                files.rename("/memories/moving", "/memories/moved")
                files.rename("/memories/moved", "/memories/moving")

            def replace_and_back() -> None:
                files.str_replace(path, "Note 1:", "NOTE 1:")
                files.str_replace(path, "NOTE 1:", "Note 1:")

            rows = [
                ("view /memories", median_ms(lambda: files.view("/memories"), repeats)),
                ("view a file", median_ms(lambda: files.view(path), repeats)),
                ("create + delete", median_ms(create_delete, repeats)),
                ("str_replace (x2)", median_ms(replace_and_back, repeats)),
                ("insert", median_ms(lambda: files.insert(path, 1, "more"), repeats)),
                ("rename a 20-file directory (x2)", median_ms(rename_there_and_back, repeats)),
                ("render the system prompt", median_ms(memory.get_system_prompt_addition, repeats)),
            ]
            prompt = memory.get_system_prompt_addition()
            everything = sum(len(b.value) for b in memory.list_blocks())
            memory.create_block(
                "large.md", ("a line of a large file\n" * 20_000)[:400_000], limit=1_000_000
            )
            absent = "z" * (50_000_000 if not args.quick else 5_000_000)

            def refused(old: str) -> Callable[[], object]:
                def attempt() -> (
                    object
                ):  # issue 23: linear in the block, a short error whatever was sent
                    try:
                        return files.str_replace("/memories/large.md", old, "x")
                    except MemoryToolError as error:
                        return str(error)

                return attempt

            rows += [
                ("str_replace old_str='' on 400k chars", median_ms(refused(""), repeats)),
                (
                    f"str_replace of an absent {len(absent) // 10**6} MB old_str",
                    median_ms(refused(absent), 3),
                ),
            ]
    print(f"{blocks + 20} blocks ({blocks // 4} in the prompt), median of {repeats} runs:")
    for name, value in rows:
        print(f"  {name:40s} {value:8.2f} ms")
    print(
        f"  rendered prompt: {len(prompt):,} characters (every block's value together: "
        f"{everything:,})"
    )


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
