"""Time of the full exact baccarat RTP analysis (every bet, one core).

Run: ``python benchmarks/baccarat_rtp.py [--decks 8] [--repeat 5]``. The goal is <= 2 s for
all bets of the rules document on an 8-deck shoe. Prints the time of each phase (the
enumeration of outcome classes, then settling every bet once per class through
``settle_bet``), the best and median of the full analysis, and the three main edges as a
check that the figures are the well-known ones.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from table_service.rules.baccarat import default_paytable
from table_service.rules.baccarat.rtp import analyse, outcome_classes
from table_service.rules.cards import shoe_composition


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    paytable = default_paytable()
    composition = shoe_composition(args.decks)

    enumerate_times, full_times = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        classes, _ = outcome_classes(composition)
        enumerate_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        report = analyse(paytable, decks=args.decks)
        full_times.append(time.perf_counter() - start)

    bets = len(report.bets)
    print(f"baccarat exact RTP, {args.decks} decks, {bets} bets, {len(classes)} outcome classes")
    print(
        f"  enumeration only : best {min(enumerate_times):.3f} s  "
        f"median {statistics.median(enumerate_times):.3f} s"
    )
    print(
        f"  full analysis    : best {min(full_times):.3f} s  "
        f"median {statistics.median(full_times):.3f} s  (goal <= 2 s, {args.repeat} runs, 1 core)"
    )
    for bet in ("banker", "player", "tie"):
        print(f"  {bet:6s} house edge {float(report.bets[bet].house_edge) * 100:.4f} %")


if __name__ == "__main__":
    main()
