"""Time of the exact blackjack RTP, with the RTP itself and a Monte-Carlo cross-check.

Run: ``python benchmarks/blackjack_rtp.py [--rules FILE] [--rounds N] [--seed S]``.
Goal: the exact 8-deck computation in <= 60 s. The Monte-Carlo part plays N single-seat
rounds off the top of a freshly shuffled shoe through the live round code
(``round_state.apply`` + ``settlement.settle``) with the solver's strategy and reports
how many standard errors the mean lies from the exact figure.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from table_service.rules.blackjack.config import load_rules
from table_service.rules.blackjack.exact import (
    ExactSolver,
    insurance_report,
    pair_report,
    solve_main,
)
from table_service.rules.blackjack.solver_player import play_single_seat, shuffled_shoe

SEED_MAX_RTP = 0.9954


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rules = load_rules(args.rules)

    started, cpu_started = time.perf_counter(), time.process_time()
    report = solve_main(rules)
    exact_seconds = time.perf_counter() - started
    exact_cpu = time.process_time() - cpu_started
    pair, insurance = pair_report(rules), insurance_report(rules)
    print(f"blackjack exact RTP, {rules.decks} decks")
    print(f"  time                 {exact_seconds:8.2f} s   (goal <= 60 s; CPU {exact_cpu:.2f} s)")
    edge = report.house_edge * 100
    print(f"  main RTP             {report.rtp * 100:8.4f} %   house edge {edge:.4f} %")
    print(f"  seed stated maximum  {SEED_MAX_RTP * 100:8.4f} %   difference "
          f"{(report.rtp - SEED_MAX_RTP) * 100:+.4f} points")  # fmt: skip
    print(f"  pair RTP             {float(pair.rtp) * 100:8.4f} %   ({pair.rtp})")
    print(f"  insurance RTP        {float(insurance.rtp) * 100:8.4f} %   ({insurance.rtp})")

    if args.rounds <= 0:
        return
    solver = ExactSolver(rules)
    rng = random.Random(args.seed)
    shoe = solver.shoe
    started = time.perf_counter()
    results = [
        play_single_seat(solver, shuffled_shoe(shoe, rng)) / 1000 for _ in range(args.rounds)
    ]
    mc_seconds = time.perf_counter() - started
    mean = statistics.fmean(results)
    stderr = statistics.stdev(results) / len(results) ** 0.5
    print(f"Monte-Carlo through the live round code, {args.rounds} rounds ({mc_seconds:.1f} s)")
    print(f"  mean net per unit    {mean:+.5f} +/- {stderr:.5f} (1 s.e.)")
    z = (mean - report.expectation) / stderr
    print(f"  exact                {report.expectation:+.5f}   z = {z:+.2f}")


if __name__ == "__main__":
    main()
