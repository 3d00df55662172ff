"""Xì Dách house edge per profile: exact, with the Monte-Carlo run as its cross-check.

Run: ``python benchmarks/xidach_rtp.py [ROUNDS] [SEED]`` (default 200000 rounds, seed 2026).
One punter against the house banker, both on the profile's automatic policy (the
punter's timeout play, the house's published policy). The exact figure enumerates the
deck (``rules/xidach/exact.py``); every simulated round is played by the live engine and
paid by the live settlement code. For each profile: the exact edge, the commission that
brings it to at least +1 %, the simulated edge with its 95 % CI and how many standard
errors it lies from the exact one. Speed: the exact computation's time as a ratio to
the floor of one simulated round measured in the same run ("costs as much as N rounds").
"""

from __future__ import annotations

import os
import sys
import time

from table_service.rules.xidach.exact import exact_edge
from table_service.rules.xidach.profile import PROFILE_NAMES, load_profile
from table_service.rules.xidach.simulate import house_edge


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2026
    workers = os.cpu_count() or 1
    start, cpu = time.perf_counter(), time.process_time()
    house_edge(load_profile("classic"), 20_000, seed, workers=1)
    per_round, cpu_round = (
        (time.perf_counter() - start) / 20_000,
        (time.process_time() - cpu) / 20_000,
    )
    print(
        f"floor: one simulated round {per_round * 1e6:.0f} µs wall, {cpu_round * 1e6:.0f} µs CPU "
        f"(single process; wall > CPU: a busy machine)"
    )
    print(f"xidach house edge: exact, and {rounds} simulated rounds per profile (seed {seed})")
    for name in PROFILE_NAMES:
        profile = load_profile(name)
        exact = exact_edge(profile)
        need = exact.commission_for(0.01)
        print(
            f"{name:12s} exact {exact.house_edge:+.4%}  (commission {float(need):.1%} gives "
            f"{exact.edge_with(need):+.4%})  computed in {exact.seconds:.2f} s = "
            f"{exact.seconds / per_round:,.0f}x the floor"
        )
        start = time.perf_counter()
        report = house_edge(profile, rounds, seed, workers=workers)
        elapsed = time.perf_counter() - start
        low, high = report.ci95
        z = (report.house_edge - exact.house_edge) / report.std_error
        inside = "inside" if low <= exact.house_edge <= high else "OUTSIDE"
        print(
            f"{'':12s} simulated {report.house_edge:+.4%}  95% CI [{low:+.4%}, {high:+.4%}]  "
            f"z = {z:+.2f}, exact {inside} the CI  ({elapsed:.1f} s, "
            f"{rounds / elapsed:,.0f} rounds/s on {workers} worker(s))"
        )


if __name__ == "__main__":
    main()
