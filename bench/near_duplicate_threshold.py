"""Measure where near-duplicate passages begin, for the rules consolidator's merge threshold.

Pairs of passages, labelled by hand: SAME (one fact, reworded) and DIFFERENT (two facts that share
most of their wording: another number, name, date, unit, sign or a negation, an opposite, or a
related but distinct fact). For each pair: the cosine similarity of the shipped all-MiniLM-L6-v2
embeddings, and whether `textguard.same_particulars` lets the pair merge. Printed: the similarity
ranges of both labels, then for thresholds from 0.80 to 0.99 how many SAME pairs would merge
(recall) and how many DIFFERENT pairs would wrongly merge, by similarity alone and with the guard.

`--quick` runs a third of the pairs (the suite runs it; figures are for reading only).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_agent.archival.embeddings import MiniLMEmbeddingFunction  # noqa: E402
from memory_agent.consolidation.rules import NEAR_DUPLICATE_THRESHOLD, similarity_matrix  # noqa: E402
from memory_agent.consolidation.textguard import same_particulars  # noqa: E402

SAME = [
    ("The harbour master is called Ines Duarte.", "Ines Duarte is the harbour master."),
    ("The harbour master is called Ines Duarte.", "The name of the harbour master is Ines Duarte."),
    ("Ines Duarte is the harbour master.", "The name of the harbour master is Ines Duarte."),
    ("The user prefers tea over coffee.", "The user prefers tea to coffee."),
    ("The user's daughter is named Mara.", "The user has a daughter named Mara."),
    ("Berth 4 was repainted green in May.", "In May, berth 4 was repainted green."),
    ("The team standup is at 9:30 every weekday.", "Every weekday the team standup is at 9:30."),
    ("The user is allergic to peanuts.", "The user has a peanut allergy."),
    ("The project deadline is 14 March.", "The deadline of the project is 14 March."),
    ("Kofi works as a nurse in Accra.", "Kofi is a nurse in Accra."),
    ("The user likes hiking on weekends.", "On weekends the user likes hiking."),
    ("The server runs PostgreSQL 15.", "PostgreSQL 15 runs on the server."),
    ("The user's favourite colour is blue.", "Blue is the user's favourite colour."),
    ("The user drives a red Fiat Panda.", "The user's car is a red Fiat Panda."),
    ("The office moved to the third floor.", "The office has moved to the third floor."),
    ("Lena speaks German and Portuguese.", "Lena speaks Portuguese and German."),
    ("The user's cat is called Pimenta.", "The user has a cat called Pimenta."),
    ("The ferry to Sintra leaves at 8.", "The ferry to Sintra departs at 8."),
    ("The user wants short answers.", "The user wants answers to be short."),
    ("The budget for the trip is 1200 euros.", "The trip's budget is 1200 euros."),
    ("Marta is the user's sister.", "The user's sister is Marta."),
    ("The user does not eat meat.", "The user doesn't eat meat."),
    ("The warehouse closes at 18:00 on Fridays.", "On Fridays the warehouse closes at 18:00."),
    ("The user studied physics at Coimbra.", "The user studied physics in Coimbra."),
]
DIFFERENT = [
    ("Berth 4 was repainted green in May.", "Berth 5 was repainted green in May."),
    ("The harbour master is called Ines Duarte.", "The harbour master is called Rita Duarte."),
    ("The project deadline is 14 March.", "The project deadline is 15 March."),
    ("The team standup is at 9:30 every weekday.", "The team standup is at 10:30 every weekday."),
    ("The user is allergic to peanuts.", "The user is not allergic to peanuts."),
    ("The user prefers tea over coffee.", "The user prefers coffee over tea."),
    ("The user lives in Lisbon.", "The user lives in Porto."),
    ("Kofi works as a nurse in Accra.", "Kofi works as a nurse in Kumasi."),
    ("The server runs PostgreSQL 15.", "The server runs PostgreSQL 16."),
    ("The budget for the trip is 1200 euros.", "The budget for the trip is 1500 euros."),
    ("The user's daughter is named Mara.", "The user's son is named Mara."),
    ("Lena speaks German and Portuguese.", "Lena speaks German and Spanish."),
    ("The user's cat is called Pimenta.", "The user's dog is called Pimenta."),
    ("The ferry to Sintra leaves at 8.", "The ferry to Cascais leaves at 8."),
    ("Marta is the user's sister.", "Marta is the user's cousin."),
    ("The warehouse closes at 18:00 on Fridays.", "The warehouse closes at 18:00 on Saturdays."),
    ("The user drives a red Fiat Panda.", "The user drives a blue Fiat Panda."),
    ("The office moved to the third floor.", "The office moved to the fourth floor."),
    ("Room 12 has a broken projector.", "Room 14 has a broken projector."),
    ("Invoice 2291 was paid on 3 June.", "Invoice 2292 was paid on 3 June."),
    ("The user likes hiking on weekends.", "The user likes cycling on weekends."),
    ("The user's favourite colour is blue.", "The user's favourite colour is green."),
    ("The user studied physics at Coimbra.", "The user studied chemistry at Coimbra."),
    ("Flight TP 1234 leaves Lisbon at 07:05.", "Flight TP 1236 leaves Lisbon at 07:05."),
    # A sign, a unit, am/pm, a letter suffix, an opposite or role word, a code's case.
    ("The freezer is kept at -18 degrees.", "The freezer is kept at 18 degrees."),
    ("Standup is at 7am every day.", "Standup is at 7pm every day."),
    ("Berth 4a was repainted green in May.", "Berth 4b was repainted green in May."),
    ("The invoice is due in 20 days.", "The invoice is due in 20 weeks."),
    ("The harbour crane lifts up to 40 tonnes.", "The harbour crane lifts up to 40 kilograms."),
    ("Ada arrives before noon.", "Ada arrives after noon."),
    ("The warehouse is on the left of the gate.", "The warehouse is on the right of the gate."),
    ("Ines prefers the morning shift.", "Ines prefers the evening shift."),
    ("The contract was signed by the buyer.", "The contract was signed by the seller."),
    ("The wifi password is Hunter2Blue.", "The wifi password is hunter2blue."),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a third of the pairs")
    args = parser.parse_args()
    same, different = (SAME[::3], DIFFERENT[::3]) if args.quick else (SAME, DIFFERENT)
    embed = MiniLMEmbeddingFunction()

    def scored(pairs: list[tuple[str, str]]) -> list[tuple[float, bool, str, str]]:
        out = []
        for first, second in pairs:
            similarity = float(similarity_matrix(embed([first, second]))[0, 1])
            out.append((similarity, same_particulars(first, second) is None, first, second))
        return out

    same_scores, different_scores = scored(same), scored(different)
    print(
        f"pairs: {len(same_scores)} same-fact, {len(different_scores)} different-fact "
        "(all-MiniLM-L6-v2)"
    )
    for name, scores in (("same-fact", same_scores), ("different-fact", different_scores)):
        values = sorted(score for score, *_ in scores)
        print(
            f"{name:15s} similarity min {values[0]:.3f}  median {values[len(values) // 2]:.3f}  "
            "max "
            f"{values[-1]:.3f}"
        )
    blocked_same = [(s, a, b) for s, ok, a, b in same_scores if not ok]
    print(f"same-fact pairs the guard blocks: {len(blocked_same)}")
    for score, first, second in blocked_same:
        print(f"  {score:.3f}  {first!r} / {second!r}: {same_particulars(first, second)}")
    print("threshold  same merged (sim only / +guard)  different merged (sim only / +guard)")
    for step in range(80, 100):
        threshold = step / 100
        same_sim = sum(score >= threshold for score, *_ in same_scores)
        same_both = sum(score >= threshold and ok for score, ok, *_ in same_scores)
        diff_sim = sum(score >= threshold for score, *_ in different_scores)
        diff_both = sum(score >= threshold and ok for score, ok, *_ in different_scores)
        mark = "  <- shipped" if abs(threshold - NEAR_DUPLICATE_THRESHOLD) < 1e-9 else ""
        print(
            f"  {threshold:.2f}     {same_sim:3d} / {same_both:3d} of {len(same_scores)}"
            f"                {diff_sim:3d} / {diff_both:3d} of {len(different_scores)}{mark}"
        )
    leaks = [(s, a, b) for s, ok, a, b in different_scores if ok]
    print(f"different-fact pairs the guard lets through (similarity decides them): {len(leaks)}")
    for score, first, second in leaks:
        print(f"  {score:.3f}  {first!r} / {second!r}")


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
