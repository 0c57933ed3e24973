"""The conversation: recall memory (every message, and the summaries that replaced old ones),
searching it, and compacting it on our storage."""
