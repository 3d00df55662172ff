"""Xì Dách house edge per profile, and how fast the engine plays rounds.

Run: ``python benchmarks/xidach_rtp.py [ROUNDS] [SEED]`` (default 200000 rounds, seed 2026).
Every round is played by the live engine and paid by the live settlement code, one
punter against the house banker, both on the profile's automatic (timeout) policy.
"""

from __future__ import annotations

import os
import sys
import time

from table_service.rules.xidach.profile import PROFILE_NAMES, load_profile
from table_service.rules.xidach.simulate import house_edge


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2026
    workers = os.cpu_count() or 1
    print(f"xidach house edge: {rounds} rounds per profile, seed {seed}, {workers} worker(s)")
    for name in PROFILE_NAMES:
        profile = load_profile(name)
        start = time.perf_counter()
        report = house_edge(profile, rounds, seed, workers=workers)
        elapsed = time.perf_counter() - start
        low, high = report.ci95
        print(
            f"{name:12s} house edge {report.house_edge:+.4%}  95% CI [{low:+.4%}, {high:+.4%}]"
            f"  RTP {report.rtp:.4%}  ({elapsed:.1f} s, {rounds / elapsed:,.0f} rounds/s)"
        )
    start, cpu = time.perf_counter(), time.process_time()
    house_edge(load_profile("classic"), 20_000, seed, workers=1)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"single process: {20_000 / elapsed:,.0f} rounds/s, {elapsed * 1e6 / 20_000:.0f} µs "
        f"wall and {cpu * 1e6 / 20_000:.0f} µs CPU per round (wall > CPU: a busy machine)"
    )


if __name__ == "__main__":
    main()
