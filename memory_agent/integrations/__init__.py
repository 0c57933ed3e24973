"""memory-agent inside other frameworks' shapes: Anthropic's memory tool, the SDK's session
store, the Agent College's three-agent session."""
