"""Monte-Carlo house edge: a house banker against punters, both on the automatic policy.

Each simulated round is played by the live engine (``new_round`` / ``apply``) and paid
by the live settlement code, so the figure measures the rules the table runs. Rounds
use a freshly shuffled shoe from a seeded generator: the same seed gives the same
report on every machine.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from table_service.rules.cards import Card, standard_deck
from table_service.rules.xidach.actions import Deal, NoDecision
from table_service.rules.xidach.engine import apply, awaiting, new_round, next_card_target
from table_service.rules.xidach.profile import Profile
from table_service.rules.xidach.settlement import HandSettlement, settle
from table_service.rules.xidach.state import Phase, SeatBet

UNIT_STAKE = 1000  # minor units; even, so every payout of the profiles is exact
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class EdgeReport:
    profile: str
    decks: int
    rounds: int
    punters: int
    seed: int
    house_edge: float  # expected loss per unit of the initial stake, as a fraction
    std_error: float
    ci95: tuple[float, float]
    outcomes: dict[str, float]  # share of punter hands by result
    kinds: dict[str, float]  # share of final punter hands by classification

    @property
    def rtp(self) -> float:
        return 1.0 - self.house_edge


def play_round(
    profile: Profile, shoe: list[Card], punters: int
) -> tuple[int, int, list[HandSettlement]]:
    """One automatic round on ``shoe`` (top first); returns (staked, returned, hands)."""
    state = new_round(profile, [SeatBet(seat, UNIT_STAKE) for seat in range(1, punters + 1)])
    position = 0
    while state.phase is not Phase.SETTLED:
        if next_card_target(state) is not None:
            state = apply(state, Deal(shoe[position]))
            position += 1
        else:
            actor = awaiting(state)
            assert actor is not None  # the engine always awaits a card or a decision
            state = apply(state, NoDecision(actor))
    result = settle(state)
    return punters * UNIT_STAKE, result.total_returned, list(result.hands)


@dataclass(frozen=True, slots=True)
class ChunkTally:
    """Sums over one block of rounds; blocks are seeded independently of the worker count."""

    rounds: int
    total: float
    total_sq: float
    outcomes: dict[str, int]
    kinds: dict[str, int]


def run_chunk(profile: Profile, seed: int, chunk: int, rounds: int, punters: int) -> ChunkTally:
    rng = random.Random(f"xidach/{profile.name}/{seed}/{chunk}")
    shoe = list(standard_deck()) * profile.decks
    total = total_sq = 0.0
    outcomes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for _ in range(rounds):
        rng.shuffle(shoe)
        staked, returned, hands = play_round(profile, shoe, punters)
        x = (returned - staked) / staked  # the punters' net per unit staked this round
        total += x
        total_sq += x * x
        for h in hands:
            outcomes[h.result.value] += 1
            kinds[h.value.kind.value] += 1
    return ChunkTally(rounds, total, total_sq, dict(outcomes), dict(kinds))


CHUNK_ROUNDS = 5000


def house_edge(
    profile: Profile,
    rounds: int,
    seed: int,
    *,
    punters: int = 1,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> EdgeReport:
    """Estimate the house edge per unit initially staked, with a 95 % confidence interval.

    Rounds are cut into fixed blocks, each with its own seed derived from ``seed``, so
    the report is the same whatever ``workers`` is.
    """
    if rounds < 2:
        raise ValueError("need at least 2 rounds for a confidence interval")
    if not 1 <= punters <= profile.max_punters:
        raise ValueError(f"punters must be 1–{profile.max_punters} for profile {profile.name}")
    sizes = [CHUNK_ROUNDS] * (rounds // CHUNK_ROUNDS)
    if rounds % CHUNK_ROUNDS:
        sizes.append(rounds % CHUNK_ROUNDS)
    args = [(profile, seed, k, n, punters) for k, n in enumerate(sizes)]
    tallies: list[ChunkTally | None] = [None] * len(sizes)
    done = 0
    if workers <= 1:
        for k, a in enumerate(args):
            tallies[k] = run_chunk(*a)
            done += sizes[k]
            if progress is not None:
                progress(done)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(run_chunk, *a): k for k, a in enumerate(args)}
            for future in as_completed(futures):
                k = futures[future]
                tallies[k] = future.result()
                done += sizes[k]
                if progress is not None:
                    progress(done)
    return _report(profile, seed, punters, [t for t in tallies if t is not None])


def _report(profile: Profile, seed: int, punters: int, tallies: list[ChunkTally]) -> EdgeReport:
    rounds = sum(t.rounds for t in tallies)
    total = math.fsum(t.total for t in tallies)
    total_sq = math.fsum(t.total_sq for t in tallies)
    outcomes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for t in tallies:
        outcomes.update(t.outcomes)
        kinds.update(t.kinds)
    mean = total / rounds
    variance = max(total_sq / rounds - mean * mean, 0.0) * rounds / (rounds - 1)
    se = math.sqrt(variance / rounds)
    edge = -mean
    n_hands = sum(outcomes.values())
    return EdgeReport(
        profile=profile.name,
        decks=profile.decks,
        rounds=rounds,
        punters=punters,
        seed=seed,
        house_edge=edge,
        std_error=se,
        ci95=(edge - Z95 * se, edge + Z95 * se),
        outcomes={k: v / n_hands for k, v in sorted(outcomes.items())},
        kinds={k: v / n_hands for k, v in sorted(kinds.items())},
    )
