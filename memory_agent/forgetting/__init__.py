"""Forget for real (issue 26): an item, every copy and derivative the store holds, and its bytes.

`Forgetting` (in `purge`) does the work for `MemoryManager.forget_passage`, `forget_message`,
`forget_block` and `forget_agent`; `Resummarizer` writes again the summaries a forgotten message
reached; `session_mirror` clears the SDK session store's copy of the conversation.
"""

from .purge import MIN_COPY_CHARS, ForgetReport, Forgetting
from .resummarize import PENDING_SUMMARY, Resummarizer, RewriteOutcome

__all__ = [
    "MIN_COPY_CHARS",
    "PENDING_SUMMARY",
    "ForgetReport",
    "Forgetting",
    "Resummarizer",
    "RewriteOutcome",
]
