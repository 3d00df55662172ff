"""Random sequences of table commands keep the table's invariants (Hypothesis)."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import event, given, settings
from hypothesis import strategies as st

from audit.chain import utc_timestamp
from table_service.errors import Refused
from table_service.rules.baccarat import BET_TYPES
from table_service.rules.cards import standard_deck
from table_service.table import commands as c
from table_service.table.config import TableConfig
from tests.table.table_helpers import Harness

# "step" is what a good dealer does next; the rest are the disruptions of the rules document.
ACTIONS = st.sampled_from(
    ["step"] * 60
    + ["bet"] * 8
    + [
        "cut",
        "void",
        "expose1",
        "expose2",
        "in_shoe",
        "forgotten",
        "missed",
        "resolve",
        "resolve",
        "fault",
        "unneeded",
        "change",
        "tick",
        "open",
        "close",
        "insert",
    ]
)


def _shoe(seed: int) -> list[str]:
    cards = [card.code for card in standard_deck()] * 8
    random.Random(seed).shuffle(cards)
    return cards


def _next_step(h: Harness) -> str:
    if h.state.incidents:
        return "resolve"
    if h.state.shoe is None:
        return "insert"
    rnd = h.state.round
    if not h.state.shoe.ready or (rnd is not None and rnd.phase == "dealing"):
        return "card"
    if rnd is None or not rnd.active:
        return "open"
    expired = utc_timestamp(h.now) >= rnd.closes_at
    return "close" if len(rnd.bets) >= 3 or expired else "bet"


@settings(max_examples=150)
@given(st.integers(0, 10**6), st.lists(ACTIONS, min_size=20, max_size=400))
def test_random_play_keeps_money_and_card_invariants(seed: int, actions: list[str]) -> None:
    rng = random.Random(seed)
    h = Harness(
        TableConfig(table_id="t1", insurance_bet_types=("either_natural",), betting_seconds=60)
    )
    shoe = _shoe(seed)
    for action in actions:
        try:
            if action == "step":
                action = _next_step(h)
            if action == "insert":
                h.run(c.InsertShoe())
            elif action == "open":
                h.run(c.OpenBetting())
            elif action == "bet":
                h.bet(
                    rng.choice(BET_TYPES),
                    rng.choice([100, 250, 1000, 5000]),
                    account=f"a{rng.randint(1, 3)}",
                )
            elif action == "close":
                h.run(c.CloseBetting())
            elif action in ("card", "unneeded", "expose1") and shoe:
                h.run(c.CardScanned(shoe.pop()))
            elif action == "cut":
                h.run(c.CutCard())
            elif action == "void":
                h.run(c.VoidRound("supervisor decision", change_shoe=rng.random() < 0.5))
            elif action == "expose2":
                h.run(c.RaiseIncident("cards_exposed", {"count": 2}))
            elif action == "in_shoe":
                h.run(c.RaiseIncident("card_exposed_in_shoe", {}))
            elif action == "forgotten":
                h.run(c.RaiseIncident("insurance_card_forgotten", {}))
            elif action == "missed":
                h.run(c.RaiseIncident("missed_scan", {}))
            elif action == "fault":
                h.run(c.ReaderFault(rng.choice(["missed_card_suspected", "offline", "unreadable"])))
            elif action == "resolve" and h.state.incidents:
                incident = rng.choice(sorted(h.state.incidents))
                entered: tuple[c.EnteredCard, ...] = ()
                rnd = h.state.round
                if rnd is not None and rnd.phase == "dealing" and shoe and rng.random() < 0.5:
                    entered = (c.EnteredCard(shoe.pop(), rng.randint(0, len(rnd.cards))),)
                h.run(c.ResolveIncident(incident, "resolved", entered))
            elif action == "change":
                h.run(c.ChangeShoe())
            elif action == "tick":
                h.tick(rng.choice([1, 30, 61]))
        except Refused:
            pass

    # The state is exactly the fold of the events (crash recovery rebuilds the same table).
    assert h.replayed() == h.state

    placed = {b["bet_id"]: b for e in h.events("bets_placed") for b in e["bets"]}
    closings: Counter[str] = Counter()
    for e in h.events("bets_settled"):
        for r in e["results"]:
            closings[r["bet_id"]] += 1
            assert r["result"] in ("win", "lose", "push", "half_refund", "forfeited")
            assert (r["returned"] == 0) == (r["result"] in ("lose", "forfeited"))
            if r["result"] == "forfeited":  # rule 8: insurance-type wagers only
                assert r["type"] == "either_natural"
            assert r["stake"] == placed[r["bet_id"]]["stake"]
    for e in h.events("bets_refunded"):
        for r in e["refunds"]:
            closings[r["bet_id"]] += 1
            assert r["returned"] == r["stake"] == placed[r["bet_id"]]["stake"]
    assert all(n == 1 for n in closings.values()), "a bet was closed twice"
    open_now = set(h.state.round.bets) if h.state.round else set()
    assert set(closings) | open_now == set(placed)
    assert not set(closings) & open_now
    if h.state.round is not None and not h.state.round.active:
        assert not h.state.round.bets

    event(f"rounds settled: {min(len(h.events('round_result')), 3)}+")
    for e in h.events("round_result"):
        assert 4 <= len(e["outcome"]["cards"]) <= 6
    if h.state.shoe is not None:
        assert all(n <= h.state.shoe.decks for n in h.state.shoe.seen.values())
