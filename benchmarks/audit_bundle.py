"""Regulator bundle: export and ``verify --replay`` time per 10,000 baccarat rounds.

Run: ``python benchmarks/audit_bundle.py [--rounds 10000] [--bets 4] [--db URL]``.
Rounds are played through the table's own ``decide`` (real events: betting, bets, every
card, result, settlement) from shuffled 8-deck shoes, appended to a scratch log with
their read models, then exported as a bundle and verified with the replay. The floor is
the rules code alone settling the same settle inputs (``settle_request`` per round) in
the same run: the replay's cost above it is the chain, the notes, the proofs and the
fold of the events.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scratch import scratch_runtime

from audit.store import NewEvent
from table_service.logs import configure_logging
from table_service.regulator.bundle import verify_bundle, write_bundle
from table_service.rules.baccarat.paytable import default_paytable
from table_service.rules.baccarat.settle_command import settle_request
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.decide import decide
from table_service.table.projector import project
from table_service.table.state import TableState
from table_service.table.wallet import Transfer, transfer

BET_TYPES = ("player", "banker", "tie", "player_pair", "banker_pair", "lucky6")


def _shoe(rng: random.Random) -> list[str]:
    cards = [r + s for r in "A23456789TJQK" for s in "SHDC"] * 8
    rng.shuffle(cards)
    return cards


def play(runtime: Runtime, rounds: int, bets: int, seed: int) -> int:
    """Play ``rounds`` rounds; returns the number of events logged."""
    rng = random.Random(seed)
    config = TableConfig(table_id="bench", betting_seconds=600)
    state = TableState("bench")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    pending: list[tuple[str, dict[str, Any], str | None]] = []
    events = 0

    def run(command: c.Command) -> dict[str, Any]:
        nonlocal state
        decision = decide(state, command, now=now, actor="bench")
        state = decision.state
        pending.extend((d.type, d.payload, d.round_id) for d in decision.drafts)
        return decision.answer

    def shoe_ready() -> bool:
        assert state.shoe is not None  # InsertShoe ran
        return state.shoe.ready

    def flush() -> None:
        nonlocal events
        with runtime.sessions.begin() as session:
            stored = runtime.store.append(
                session, [NewEvent("bench", t, "bench", p, r) for t, p, r in pending]
            )
            project(session, stored)
        events += len(pending)
        pending.clear()

    for i in range(1000):  # 10^15 in credits of the largest amount (10^12) a transfer may move
        transfer(runtime, Transfer("a1", 10**12, f"fund-{i}", "credit"), actor="bench")
    run(c.OpenTable(config))
    cards: list[str] = []
    bet_no = 0
    for n in range(rounds):
        if state.shoe is not None and len(cards) < 60:
            run(c.ChangeShoe("end of shoe"))
        if state.shoe is None:
            cards = _shoe(rng)
            run(c.InsertShoe())
            while not shoe_ready():
                run(c.CardScanned(cards.pop()))
        run(c.OpenBetting())
        requests = []
        for _ in range(bets):
            bet_no += 1
            requests.append(
                c.BetRequest(
                    f"b{bet_no}", f"k{bet_no}", "a1", rng.choice(BET_TYPES), rng.randint(1, 10**4)
                )
            )
        run(c.PlaceBets(tuple(requests), {"a1": 10**15}))
        run(c.CloseBetting())
        while state.round is not None and state.round.active:
            run(c.CardScanned(cards.pop()))
        now += timedelta(seconds=1)
        if n % 50 == 49:
            flush()
    flush()
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--bets", type=int, default=4)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with scratch_runtime(args.db) as runtime, tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        events = play(runtime, args.rounds, args.bets, args.seed)
        played = time.perf_counter() - start
        bundle = Path(tmp) / "bundle"
        start = time.perf_counter()
        with runtime.sessions() as session:
            summary = write_bundle(session, runtime.signer.public_key, "livetable", bundle)
        exported = time.perf_counter() - start
        start = time.perf_counter()
        report = verify_bundle(bundle, replay=True)
        verified = time.perf_counter() - start
        inputs = [
            json.loads(line)["settle_input"]
            for line in (bundle / "rounds.jsonl").read_text().splitlines()
        ]
        paytable = default_paytable()
        start = time.perf_counter()
        for settle_input in inputs:
            settle_request(settle_input, paytable)
        floor = time.perf_counter() - start
        backend = runtime.engine.dialect.name
    per = 10_000 / summary.rounds
    print(f"audit bundle: {summary.rounds} rounds x {args.bets} bets, {events} events, {backend}")
    print(f"  play + log      {played:8.2f} s")
    print(f"  export bundle   {exported:8.2f} s   ({exported * per:.2f} s per 10,000 rounds)")
    print(f"  verify --replay {verified:8.2f} s   ({verified * per:.2f} s per 10,000 rounds)")
    print(f"  floor (rules)   {floor:8.2f} s   settle_request on the same settle inputs")
    print(f"  ratio           {verified / floor:8.1f} x the floor")
    print(f"  {report.summary()}")


if __name__ == "__main__":
    main()
