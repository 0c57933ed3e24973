"""The model consolidator: the cheap compaction model rewrites, merges and judges contradictions.

It starts from the rules' plan (which is also its fallback) and asks the model, through the
compaction summariser's client and retry policy (`AnthropicSummarizer.send`), to:
- rewrite each over-full block into tighter text under the target share of its limit (the old
  value is archived as a passage with provenance, so nothing the block held is lost);
- write one text for each group of near-duplicate passages (a new passage with that text
  supersedes the group);
- say which pairs of related passages contradict, the newer superseding the older ("lives in
  Lisbon", later "moved to Porto").
Any failure (the API after its retries, an answer that is not what was asked, a rewrite over
its target) makes the whole run use the rules' plan instead: a warning is logged and recorded
in the session's warnings, never silent.

What the model is shown of memory travels as JSON strings, so no stored text can forge a part
of the request.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections.abc import Sequence
from typing import Any

from compaction import AnthropicSummarizer, CompactionSettings

from ..archival import Passage
from .plan import ArchivedLine, BlockRewrite, MemoryView, PassageMerge, Plan, Supersession
from .protocol import Embed
from .rules import RulesConsolidator, similar_pairs

__all__ = ["ModelAnswerError", "ModelConsolidator"]

logger = logging.getLogger(__name__)

REWRITE_SYSTEM = (
    "You tidy an AI agent's memory block. Rewrite the block's text (given as a JSON string) so it "
    "keeps every fact but uses fewer characters: drop repetition, merge related lines, keep names, "
    "numbers and dates exactly, at most the given number of characters. "
    'Answer with JSON only: {"text": "the new block text"}.'
)
MERGE_SYSTEM = (
    "You merge duplicate notes of an AI agent's memory. Each group (a JSON list of strings) states "
    "one "
    "fact in several wordings. For each group write one short text that keeps every detail of the "
    "group. "
    'Answer with JSON only: {"merged": ["text for group 1", "text for group 2", ...]} in group '
    "order."
)
SUPERSEDE_SYSTEM = (
    "You check an AI agent's memory for facts that changed. Each numbered pair is [older note, "
    "newer note]. "
    "A pair contradicts when both cannot be true now and the newer note replaces the older one "
    "(e.g. "
    "'lives in Lisbon' then 'moved to Porto'). Notes that merely differ, or add detail, do not "
    "contradict. "
    'Answer with JSON only: {"contradictions": [numbers of the contradicting pairs]}.'
)


class ModelAnswerError(ValueError):
    """The model answered, but not with what was asked."""


class _CachedEmbed:
    """Embeds each distinct text once per run (the rules and the supersession check share
    vectors)."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._vectors: dict[str, Sequence[float]] = {}

    def __call__(self, texts: Sequence[str]) -> list[Sequence[float]]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embed(missing), strict=True))
        return [self._vectors[text] for text in texts]


class ModelConsolidator:
    """Consolidation with the compaction model, falling back to `RulesConsolidator` on any failure.

    Args:
        settings: The compaction settings (model, retries, timeout) the summariser uses.
        api_key: The model API's key (default: the anthropic client's environment).
        base_url: Where the model API is (default: the anthropic client's environment).
        rules: The rules it starts from and falls back to.
        summarizer: A summariser to send through instead of making one (tests, shared clients).
        candidate_similarity: Pairs of passages at least this similar are checked for contradiction.
        max_candidates: At most this many pairs (the most similar) are checked per run.
    """

    def __init__(
        self,
        settings: CompactionSettings | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        rules: RulesConsolidator | None = None,
        summarizer: AnthropicSummarizer | None = None,
        candidate_similarity: float = 0.5,
        max_candidates: int = 40,
    ) -> None:
        self.settings = settings or CompactionSettings()
        self.rules = rules or RulesConsolidator()
        self._summarizer = summarizer
        self._owns_summarizer = summarizer is None
        self._api_key = api_key
        self._base_url = base_url
        self.candidate_similarity = candidate_similarity
        self.max_candidates = max_candidates

    @property
    def name(self) -> str:
        return f"model:{self.settings.model}"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        cached = _CachedEmbed(embed)
        base = self.rules.plan_now(view, cached)
        summarizer = self._summarizer or AnthropicSummarizer(
            self.settings, api_key=self._api_key, base_url=self._base_url
        )
        plan = Plan(
            blocks_analysed=base.blocks_analysed,
            expired=list(base.expired),
            warnings=list(base.warnings),
            input_tokens=0,
            output_tokens=0,
        )
        try:
            return await self._model_plan(view, cached, base, plan, summarizer)
        except Exception as error:
            reason = str(error) or type(error).__name__
            warning = (
                f"the model consolidator ({self.settings.model}) failed, so the rules "
                f"decided this run: {reason}"
            )
            logger.warning("consolidation of agent %s: %s", view.agent_id, warning)
            base.warnings.append(warning)
            base.input_tokens, base.output_tokens = (
                plan.input_tokens,
                plan.output_tokens,
            )  # spent all the same
            return base
        finally:
            if self._owns_summarizer:
                await summarizer.aclose()

    async def _model_plan(
        self,
        view: MemoryView,
        embed: Embed,
        base: Plan,
        plan: Plan,
        summarizer: AnthropicSummarizer,
    ) -> Plan:
        blocks = {block.block_id: block for block in view.blocks}
        for rewrite in base.rewrites:
            block = blocks[rewrite.block_id]
            target = int(self.rules.block_target * block.limit)
            answer = _json_object(
                await self._ask(
                    summarizer,
                    plan,
                    REWRITE_SYSTEM,
                    f"Block label: {json.dumps(block.label)}\nAt most {target} characters.\n"
                    f"Block text: {json.dumps(block.value, ensure_ascii=False)}",
                    max_tokens=max(256, target),
                )
            )
            # A structured answer, like the merge and supersession ones: a reply that is not the
            # block ("OK", "Sure, here it is") must never become the block's text.
            text = answer.get("text")
            if not isinstance(text, str):
                raise ModelAnswerError(
                    f"its rewrite of block '{block.label}' has no \"text\" string"
                )
            text = text.strip()
            if not text or len(text) > target:
                raise ModelAnswerError(
                    f"its rewrite of block '{block.label}' has {len(text)} characters, "
                    f"not between 1 and the target {target}"
                )
            provenance = {
                "block": block.label,
                "block_id": block.block_id,
                "block_version": block.version,
                "messages": [],
                "moved_at": view.now,
                "rewritten_by_model": True,
            }
            plan.rewrites.append(
                BlockRewrite(
                    block.label,
                    block.block_id,
                    block.version,
                    text,
                    (ArchivedLine(block.value, provenance),),
                    how="model_rewrite",
                )
            )
        by_id = {passage.passage_id: passage for passage in view.passages}
        exact = [merge for merge in base.merges if merge.reason == "the same text"]
        near = [merge for merge in base.merges if merge.reason != "the same text"]
        plan.merges.extend(exact)
        if near:
            plan.merges.extend(await self._merged_texts(summarizer, plan, near, by_id))
        grouped = {pid for merge in base.merges for pid in (merge.survivor_id, *merge.merged_ids)}
        plan.supersessions.extend(
            await self._contradictions(
                summarizer, plan, [p for p in view.passages if p.passage_id not in grouped], embed
            )
        )
        return plan

    async def _merged_texts(
        self,
        summarizer: AnthropicSummarizer,
        plan: Plan,
        near: list[PassageMerge],
        by_id: dict[str, Passage],
    ) -> list[PassageMerge]:
        groups = [
            [by_id[pid].content for pid in (merge.survivor_id, *merge.merged_ids)] for merge in near
        ]
        listing = "\n".join(
            f"Group {number}: {json.dumps(texts, ensure_ascii=False)}"
            for number, texts in enumerate(groups, start=1)
        )
        answer = _json_object(
            await self._ask(summarizer, plan, MERGE_SYSTEM, listing, max_tokens=1024)
        )
        merged = answer.get("merged")
        if (
            not isinstance(merged, list)
            or len(merged) != len(near)
            or not all(isinstance(text, str) and text.strip() for text in merged)
        ):
            raise ModelAnswerError(
                f"it did not give one merged text for each of the {len(near)} groups"
            )
        return [
            PassageMerge(
                merge.survivor_id,
                merge.merged_ids,
                merge.reason + ", text merged by the model",
                merged_text=text.strip(),
            )
            for merge, text in zip(near, merged, strict=True)
        ]

    async def _contradictions(
        self, summarizer: AnthropicSummarizer, plan: Plan, passages: list[Passage], embed: Embed
    ) -> list[Supersession]:
        if len(passages) < 2:
            return []
        found = similar_pairs(embed([p.content for p in passages]), self.candidate_similarity)
        pairs = heapq.nlargest(self.max_candidates, ((score, i, j) for i, j, score in found))
        if not pairs:
            return []
        # Passages are oldest first, so i is the older of each pair.
        listing = "\n".join(
            f"Pair {number}: "
            f"{json.dumps([passages[i].content, passages[j].content], ensure_ascii=False)}"
            for number, (_, i, j) in enumerate(pairs, start=1)
        )
        answer = _json_object(
            await self._ask(summarizer, plan, SUPERSEDE_SYSTEM, listing, max_tokens=512)
        )
        numbers = answer.get("contradictions")
        if not isinstance(numbers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(pairs) for n in numbers
        ):
            raise ModelAnswerError("its list of contradicting pairs is not a list of pair numbers")
        chosen: list[Supersession] = []
        superseded: set[str] = set()
        for number in sorted(set(numbers)):
            _, older, newer = pairs[number - 1]
            old, new = passages[older], passages[newer]
            if old.passage_id not in superseded:
                superseded.add(old.passage_id)
                chosen.append(
                    Supersession(old.passage_id, new.passage_id, "contradicted by a newer passage")
                )
        return chosen

    async def _ask(
        self,
        summarizer: AnthropicSummarizer,
        plan: Plan,
        system: str,
        text: str,
        *,
        max_tokens: int,
    ) -> str:
        response: Any = await summarizer.send(
            {
                "model": self.settings.model,
                "max_tokens": max_tokens,
                "system": system,
                "messages": [{"role": "user", "content": text}],
                "timeout": self.settings.request_timeout,
            }
        )
        usage = getattr(response, "usage", None)
        plan.input_tokens = (plan.input_tokens or 0) + int(getattr(usage, "input_tokens", 0) or 0)
        plan.output_tokens = (plan.output_tokens or 0) + int(
            getattr(usage, "output_tokens", 0) or 0
        )
        return "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )


def _json_object(text: str) -> dict[str, Any]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ModelAnswerError("it did not answer with JSON")
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError as error:
        raise ModelAnswerError(f"its JSON does not parse ({error.msg})") from None
    if not isinstance(value, dict):
        raise ModelAnswerError("its JSON is not an object")
    return value
