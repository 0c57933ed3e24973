"""The store the browser tests look at: two agents with every kind of thing the inspector shows.

Seeded through `MemoryManager`'s public API only (as a user's agent would have written it): path
blocks, a read-only, an on-demand and a shared block, two blocks holding markup that must show as
text, a history to undo, journal entries from several kinds of author, a conversation compacted
once (the summary written by the scripted Messages API server, the model's only stand-in) and
passages with distinct words to search for.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from compaction import CompactionSettings
from memory_agent import Author, MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer, text_response

AGENT = "ada"
OTHER = "bob"
SCRIPT_BLOCK = "notes/script"
SCRIPT_TEXT = "<script>window.__pwned=1</script>"
TEXTAREA_BLOCK = "notes/textarea"
TEXTAREA_TEXT = "</textarea><b>x</b>"
EDITED_BLOCK = "human"
HUMAN_TEXT = "Name: Ada. Lives in Porto. Prefers short answers."
SUMMARY = "Ada planned a trip to Lisbon and asked about the garden."
SEARCH_WORD = "Lisbon"
TURN_USAGE = (
    {
        "input_tokens": 1234,
        "cache_creation_input_tokens": 2345,
        "cache_read_input_tokens": 0,
        "output_tokens": 56,
    },
    {
        "input_tokens": 78,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 3456,
        "output_tokens": 91,
    },
)
"""Usage of two recorded turns (the second read the cache the first wrote)."""
PASSAGES = (
    "Ada booked a train to Lisbon for the tenth of May.",
    "The Lisbon hotel is near the river, in Alfama.",
    "Tomatoes in the south bed need watering every two days.",
    "Ada's sister Marta plays the violin on Thursdays.",
    "The quarterly tax return is due at the end of July.",
)


@dataclass(frozen=True)
class Seeded:
    """Ids the tests need: the passages by content."""

    passage_ids: Mapping[str, str]


def seed(store: Mapping[str, str]) -> Seeded:
    """Write the browser tests' store where `store` (PERSIST_DIRECTORY, MEMORY_DATABASE_URL) says.

    On a thread of its own: Playwright's sync API keeps an event loop on the test's thread, and
    `compact_history` (synchronous) refuses to run inside one."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(_seed, store).result()


def _seed(store: Mapping[str, str]) -> Seeded:
    with ScriptedMessagesServer() as model:
        settings = Settings.from_env(
            {**store, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key"},
            env_file=None,
        )
        compaction = CompactionSettings(
            retry_initial_wait=0.01, retry_max_wait=0.02, max_attempts=2
        )
        with MemoryManager(
            agent_id=AGENT, settings=settings, compaction_settings=compaction
        ) as memory:
            memory.update_block(EDITED_BLOCK, value=HUMAN_TEXT)
            memory.update_block("persona", value="I am Ada's assistant. I keep notes on her plans.")
            memory.create_block(
                "projects/garden",
                "Tomatoes in the south bed; basil by the door.",
                description="The garden plan",
            )
            memory.create_block("reference/style", "Write in British English.", read_only=True)
            memory.create_block("notes/ideas", "A reading list for the summer.", in_prompt=False)
            memory.create_block(SCRIPT_BLOCK, SCRIPT_TEXT)
            memory.create_block(TEXTAREA_BLOCK, TEXTAREA_TEXT)
            memory.join_shared_block("team/calendar", value="Stand-up at 9:30 on weekdays.")
            memory.ensure_agent(OTHER)
            memory.join_shared_block("team/calendar", agent_id=OTHER)
            with memory.acting_as(Author.model(AGENT)):
                memory.core_memory_append("projects/garden", "Peppers planted on 2 May.")
            with memory.acting_as(Author.other_agent(OTHER)):
                memory.core_memory_append("team/calendar", "Retro on Fridays.")
            ids = memory.archival_memory_insert_many(
                [
                    {"content": text, "tags": ["travel" if SEARCH_WORD in text else "home"]}
                    for text in PASSAGES
                ]
            )
            for number in range(12):
                memory.store_message(
                    "user", f"Message {2 * number}: about the trip to Lisbon, part {number}."
                )
                memory.store_message("assistant", f"Reply {2 * number + 1}: noted, part {number}.")
            model.enqueue(text_response(SUMMARY), model="haiku")
            outcome = memory.compact_history()
            assert outcome.status == "compacted", outcome
            memory.store_message("user", "And what about the garden?")
            memory.store_message("assistant", "The tomatoes need water every two days.")
            for number, usage in enumerate(
                TURN_USAGE
            ):  # what MemoryAwareAgent keeps of each turn's result
                memory.store_message(
                    "result",
                    "done",
                    message_type="result",
                    session_id="session-1",
                    in_context=False,
                    metadata={
                        "subtype": "success",
                        "is_error": False,
                        "usage": usage,
                        "total_cost_usd": 0.002 * (number + 1),
                        "num_turns": 1,
                    },
                )
    return Seeded(passage_ids=dict(zip(PASSAGES, ids)))
