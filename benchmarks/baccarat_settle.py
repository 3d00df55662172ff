"""Baccarat rounds settled per second, in memory and through the settle command's loop.

Run: ``python benchmarks/baccarat_settle.py [--rounds 20000] [--bets 8]``. Rounds are dealt
from shuffled 8-deck shoes (fixed seed); each carries ``--bets`` bets of random types.
"In memory" is split_round + outcome + validate_bet + settle_bet per bet; "JSON lines"
is the whole ``livetable settle baccarat`` path (parse, settle, serialise) on in-memory
streams.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import time
from typing import Any

from table_service.rules.baccarat import (
    BET_TYPES,
    BetRefused,
    default_paytable,
    outcome,
    settle_bet,
    split_round,
    validate_bet,
)
from table_service.rules.baccarat.settle_command import settle_request
from table_service.rules.cards import Card, parse_cards, shoe_composition
from table_service.rules.settle_io import run_jsonl


def make_rounds(count: int, bets: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    shoe: list[Card] = []
    rounds: list[dict[str, Any]] = []
    game = 0
    while len(rounds) < count:
        if len(shoe) < 60:
            shoe = [card for card, n in shoe_composition(8).items() for _ in range(n)]
            rng.shuffle(shoe)
            game = 0
        game += 1
        used, _ = split_round(shoe[:6])
        del shoe[: len(used)]
        rounds.append(
            {
                "round": f"r{len(rounds)}",
                "game_number": game,
                "cards": [card.code for card in used],
                "bets": [
                    {"id": i, "type": rng.choice(BET_TYPES), "stake": rng.randint(1, 10**6)}
                    for i in range(bets)
                ],
            }
        )
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--bets", type=int, default=8)
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    paytable = default_paytable()
    rounds = make_rounds(args.rounds, args.bets, args.seed)

    parsed = [
        (parse_cards(r["cards"]), [(b["type"], b["stake"]) for b in r["bets"]], r["game_number"])
        for r in rounds
    ]
    start = time.perf_counter()
    refused = 0
    for cards, bets, game in parsed:
        result = outcome(split_round(cards)[0])
        for bet_type, stake in bets:
            try:
                validate_bet(bet_type, stake, game, paytable)
            except BetRefused:
                refused += 1
                continue
            settle_bet(bet_type, stake, result, paytable)
    in_memory = time.perf_counter() - start

    source = io.StringIO("".join(json.dumps(r) + "\n" for r in rounds))
    sink = io.StringIO()
    start = time.perf_counter()
    errors = run_jsonl(source, sink, lambda request: settle_request(request, paytable))
    jsonl = time.perf_counter() - start
    assert errors == 0

    n = len(rounds)
    print(f"baccarat settle: {n} rounds x {args.bets} bets, 1 core")
    for label, seconds in (("in memory ", in_memory), ("JSON lines", jsonl)):
        print(f"  {label} : {n / seconds:10.0f} rounds/s  ({n * args.bets / seconds:.0f} bets/s)")
    print(f"  ({refused} bets refused past their cut-off, as in a real shoe)")


if __name__ == "__main__":
    main()
