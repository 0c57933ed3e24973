"""What the model reads: the system prompt's memory sections, the per-turn context, and the
names the prompt reserves for its own parts."""
