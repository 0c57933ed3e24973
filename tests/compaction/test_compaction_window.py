"""Where compaction cuts: turn boundaries, tool pairs, minimum kept, window share, mode 'all'."""

from __future__ import annotations

import dataclasses
import random

from compaction import CompactionSettings, MessageRecord, plan_compaction, valid_cuts


def test_a_tool_result_message_does_not_start_a_turn(build) -> None:
    assert build.user(1).is_turn_start
    assert not build.tool_result(2, "toolu_a").is_turn_start
    assert not build.assistant(3).is_turn_start
    assert build.tool_call(4, "toolu_a", "toolu_b").tool_use_ids == ("toolu_a", "toolu_b")


def test_sliding_window_evicts_the_window_share_at_a_turn_start(build, small_settings) -> None:
    messages = build.conversation(50)  # 100 messages of 10 tokens: 1,000 tokens

    plan = plan_compaction(messages, small_settings, fixed_tokens=0)

    assert plan.evicted_tokens == 300  # exactly 30%: already fits under 800 - 100 reserved
    assert plan.kept[0].is_turn_start and plan.kept[0].id == 31
    assert plan.evicted + plan.kept == tuple(messages)
    assert plan.fits


def test_the_cut_moves_forward_to_the_next_turn_not_into_a_turn(build, small_settings) -> None:
    messages = build.conversation(25, tool_every=1)  # turns of 4 messages, 1,000 tokens
    settings = dataclasses.replace(small_settings, window_percentage=0.33)

    plan = plan_compaction(messages, settings, fixed_tokens=0)

    assert plan.evicted_tokens == 360  # 330 would split turn 9; the next turn starts at 360
    assert plan.kept[0].is_turn_start
    assert build.tool_pairs_intact(plan.evicted, plan.kept)


def test_more_is_evicted_when_the_share_is_not_enough_to_fit(build, small_settings) -> None:
    messages = build.conversation(50)

    plan = plan_compaction(messages, small_settings, fixed_tokens=500)

    # Room for kept messages: 800 target - 500 fixed - 100 summary reserve = 200 tokens.
    assert plan.kept_tokens == 200
    assert plan.fits


def test_summary_reserve_can_be_given(build, small_settings) -> None:
    messages = build.conversation(50)

    plan = plan_compaction(messages, small_settings, fixed_tokens=500, summary_tokens=0)

    assert plan.kept_tokens == 300


def test_headroom_for_the_next_turn_is_left_free_too(build, small_settings) -> None:
    messages = build.conversation(50)

    plan = plan_compaction(messages, small_settings, fixed_tokens=500, headroom=100)

    # Room: 800 target - 500 fixed - 100 summary reserve - 100 for the next turn.
    assert plan.kept_tokens == 100 and plan.fits
    assert plan_compaction(messages, small_settings, fixed_tokens=500, headroom=-5) == (
        plan_compaction(messages, small_settings, fixed_tokens=500)
    )  # no headroom is none


def test_min_kept_messages_wins_over_fitting(build, small_settings) -> None:
    messages = build.conversation(50)
    settings = dataclasses.replace(small_settings, min_kept_messages=5)

    plan = plan_compaction(messages, settings, fixed_tokens=790)

    assert len(plan.kept) == 6  # 5 would start mid-turn; the latest turn start keeps 6
    assert plan.kept[0].is_turn_start
    assert not plan.fits
    assert "none fits" in plan.reason


def test_no_valid_cut_gives_an_empty_plan(build, small_settings) -> None:
    one_long_turn = [
        build.user(1, tokens=300),
        build.tool_call(2, "toolu_a", tokens=300),
        build.tool_result(3, "toolu_a", tokens=300),
        build.assistant(4, tokens=300),
    ]

    plan = plan_compaction(one_long_turn, small_settings, fixed_tokens=0)

    assert plan.is_empty
    assert plan.kept == tuple(one_long_turn)
    assert "no turn boundary" in plan.reason


def test_minimum_kept_can_leave_no_valid_cut(build, small_settings) -> None:
    messages = build.conversation(3)  # 6 messages
    settings = dataclasses.replace(small_settings, min_kept_messages=6)

    assert plan_compaction(messages, settings, fixed_tokens=0).is_empty


def test_a_turn_start_inside_a_tool_pair_is_not_a_valid_cut(build) -> None:
    # The user spoke while a tool call was still open: cutting there would orphan the result.
    messages = [
        build.user(1),
        build.tool_call(2, "toolu_a"),
        build.user(3, "by the way"),
        build.tool_result(4, "toolu_a"),
        build.assistant(5),
        build.user(6),
        build.assistant(7),
    ]

    assert valid_cuts(messages) == [5]


def test_mode_all_keeps_only_the_last_turn(build, small_settings) -> None:
    messages = build.conversation(5, tool_every=1)  # last turn: user, call, result, answer
    settings = dataclasses.replace(small_settings, mode="all", min_kept_messages=10)

    plan = plan_compaction(messages, settings, fixed_tokens=0)

    assert [m.id for m in plan.kept] == [17, 18, 19, 20]
    assert len(plan.evicted) == 16


def test_mode_all_with_a_single_turn_has_nothing_to_evict(build, small_settings) -> None:
    settings = dataclasses.replace(small_settings, mode="all")

    assert plan_compaction(build.conversation(1), settings, fixed_tokens=0).is_empty


def test_records_without_tokens_are_counted_by_the_counter(small_settings) -> None:
    class WordCounter:
        def count_text(self, text: str) -> int:
            return len(text.split())

        def count_message(self, message: MessageRecord) -> int:
            assert isinstance(message.content, str)
            return self.count_text(message.content)

    words = " ".join(["word"] * 100)
    messages = [MessageRecord(i, "user" if i % 2 else "assistant", words) for i in range(1, 11)]

    plan = plan_compaction(messages, small_settings, fixed_tokens=0, counter=WordCounter())

    assert plan.evicted_tokens == 400  # the first cut evicting 30% and leaving <= 700 tokens
    assert plan.kept_tokens == 600


def _expected_cut(messages, settings, fixed_tokens, build, headroom=0) -> int | None:
    """Brute-force oracle: try every split, keep the legal ones, apply the stated rule."""
    legal = [
        cut
        for cut in range(1, len(messages))
        if messages[cut].is_turn_start
        and build.tool_pairs_intact(messages[:cut], messages[cut:])
        and (settings.mode == "all" or len(messages) - cut >= settings.min_kept_messages)
    ]
    if not legal:
        return None
    if settings.mode == "all":
        return legal[-1]
    sizes = [m.tokens for m in messages]
    room = settings.target_tokens - fixed_tokens - settings.summary_reserve_tokens - headroom
    for cut in legal:
        evicted = sum(sizes[:cut])
        if evicted >= settings.window_percentage * sum(sizes) and sum(sizes[cut:]) <= room:
            return cut
    return legal[-1]


def test_random_conversations_are_cut_where_the_rules_say(build) -> None:
    rng = random.Random(1234)
    for _ in range(300):
        messages = build.random_conversation(rng, turns=rng.randint(1, 30))
        settings = CompactionSettings(
            context_window=rng.choice([1000, 3000, 10_000]),
            clip_chars=200,
            mode=rng.choice(["sliding_window", "all"]),
            window_percentage=rng.random(),
            min_kept_messages=rng.randint(0, 8),
        )
        fixed = rng.randint(0, 400)
        headroom = rng.choice([0, rng.randint(0, 300)])

        plan = plan_compaction(messages, settings, fixed_tokens=fixed, headroom=headroom)

        assert plan.evicted + plan.kept == tuple(messages)
        assert build.tool_pairs_intact(plan.evicted, plan.kept)
        expected = _expected_cut(messages, settings, fixed, build, headroom)
        assert (None if plan.is_empty else len(plan.evicted)) == expected
        if not plan.is_empty:
            assert plan.kept[0].is_turn_start
