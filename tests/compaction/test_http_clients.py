"""The Anthropic clients the library makes share one TLS context (compaction/http_clients.py)."""

from __future__ import annotations

import ssl

import pytest

from compaction import AnthropicSummarizer, CompactionSettings
from compaction.http_clients import shared_ssl_context
from memory_agent.archival.rerank import AnthropicReranker
from memory_agent.testing import ScriptedMessagesServer, text_response


def test_summarisers_and_a_reranker_load_the_certificates_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counted(context: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(context)
        original(context, *args, **kwargs)  # type: ignore[arg-type]  # the stdlib's own arguments

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    shared_ssl_context.cache_clear()
    settings = CompactionSettings(model="claude-haiku-4-5")
    for _ in range(3):
        assert AnthropicSummarizer(settings, api_key="k", base_url="http://127.0.0.1:9").client
    assert AnthropicReranker("claude-haiku-4-5", api_key="k", base_url="http://127.0.0.1:9").client
    assert len(loads) == 1


async def test_a_summariser_on_the_shared_context_still_reaches_the_server() -> None:
    with ScriptedMessagesServer() as server:
        server.enqueue(text_response("SUMMARY-TLS-1"))
        async with AnthropicSummarizer(
            CompactionSettings(model="claude-haiku-4-5"), api_key="k", base_url=server.url
        ) as summarizer:
            reply = await summarizer.client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=50,
                messages=[{"role": "user", "content": "summarise"}],
            )
    assert reply.content[0].type == "text" and reply.content[0].text == "SUMMARY-TLS-1"
