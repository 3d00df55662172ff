"""Live baccarat behind the :class:`~table_service.rules.game.LiveGame` interface.

An adapter over the rules already in this package (``next_position``, ``outcome``,
``validate_bet``, ``settle_bet``, ``settle_request``): no rule is restated here. A
baccarat round takes no decisions; its state is the cards dealt to it, in shoe order.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal

from table_service.rules.baccarat.dealing import next_position, positions
from table_service.rules.baccarat.errors import BetRefused
from table_service.rules.baccarat.outcome import Outcome, outcome
from table_service.rules.baccarat.paytable import (
    BET_TYPES,
    DEFAULT_PAYTABLE_RESOURCE,
    Paytable,
    paytable_from_dict,
)
from table_service.rules.baccarat.points import hand_total
from table_service.rules.baccarat.settle_command import settle_request
from table_service.rules.baccarat.settlement import settle_bet, validate_bet
from table_service.rules.cards import Card, CardError, parse_card
from table_service.rules.game import (
    Audience,
    Bet,
    BetLike,
    BettingContext,
    Complete,
    GameBase,
    IncidentKind,
    Input,
    Line,
    Move,
    Next,
    RoundSetup,
    RulesRefusal,
    Settlement,
    Spot,
    Stake,
)


def default_paytable_text() -> str:
    return (
        resources.files("table_service.rules.baccarat")
        .joinpath(DEFAULT_PAYTABLE_RESOURCE)
        .read_text("utf-8")
    )


@dataclass(frozen=True, slots=True)
class BaccaratRules:
    paytable: Paytable
    decks: int = 8


@dataclass(frozen=True, slots=True)
class BaccaratRound:
    """A round in play: its bets (as placed) and its cards in shoe order."""

    rules: BaccaratRules
    round_id: str
    game_number: int
    bets: tuple[Bet, ...]
    cards: tuple[Card, ...] = ()


INCIDENTS: Mapping[str, IncidentKind] = MappingProxyType(
    {
        k.kind: k
        for k in (
            IncidentKind(
                "shuffle_card_dropped",
                False,
                "rule 1: supervisor replaces the cards and re-shuffles",
            ),
            IncidentKind(
                "multi_pull", True, "rule 2: supervisor re-assigns the cards in shoe order"
            ),
            IncidentKind(
                "cards_exposed",
                False,
                "rule 4: two or more exposed cards void the round; new shoe",
                frozenset({"void_on_count"}),
            ),
            IncidentKind(
                "card_exposed_in_shoe",
                False,
                "rule 5: round stands; insurance-type wagers refunded",
                frozenset({"refund_insurance"}),
            ),
            IncidentKind(
                "missed_scan",
                True,
                "rule 6: supervisor enters the missed card; positions re-arranged",
                frozenset({"refund_insurance_on_resolve"}),
            ),
            IncidentKind(
                "insurance_card_forgotten",
                False,
                "rule 8: the insurance card was forgotten and exposed during scanning: "
                "insurance-type wagers are forfeited (lost, not refunded); every other bet "
                "stands and the round continues",
                frozenset({"forfeit_insurance"}),
            ),
            IncidentKind(
                "other", True, "supervisor may pause the table and void the round; new shoe"
            ),
        )
    }
)


class BaccaratGame(GameBase):
    """Live baccarat (rules/baccarat.md)."""

    name = "baccarat"
    stray_card: Literal["carry", "incident"] = "carry"
    on_restart: Literal["resume", "void"] = "resume"
    incidents = INCIDENTS
    shoe_burn = True

    # -- the table ---------------------------------------------------------------------------
    def default_paytable_toml(self) -> str:
        """The paytable of ``rules/baccarat.md``, recorded by a table whose file names none."""
        return default_paytable_text()

    def layout(self, cards: Sequence[str]) -> dict[str, Any]:
        """Cards by position with each hand's total (cards in shoe order): what the consoles
        show, also of a round whose bets the table never set up."""
        try:
            parsed = [parse_card(c) for c in cards]
        except CardError:
            return {"positions": [], "hands": []}
        taken = positions(parsed)
        player = [c for c, p in zip(parsed, taken, strict=False) if p.value.startswith("P")]
        banker = [c for c, p in zip(parsed, taken, strict=False) if p.value.startswith("B")]
        return {
            "positions": [
                {"position": p.value, "card": c.code} for c, p in zip(parsed, taken, strict=False)
            ],
            "hands": [
                {
                    "hand": "player",
                    "cards": [c.code for c in player],
                    "total": hand_total(player) if player else None,
                },
                {
                    "hand": "banker",
                    "cards": [c.code for c in banker],
                    "total": hand_total(banker) if banker else None,
                },
            ],
        }

    def shoe_roads(self, outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The big road and its derived roads of the shoe's rounds so far."""
        from table_service.rules.baccarat.roads import RoadResult, roads

        return roads(RoadResult.from_outcome(o) for o in outcomes).to_json()

    def theoretical_rtp(self, rules: BaccaratRules) -> dict[str, float]:
        """Each bet's exact return for this paytable and shoe (``livetable rtp baccarat``)."""
        from table_service.rules.baccarat.rtp import analyse  # enumerates: only when asked

        report = analyse(rules.paytable, decks=rules.decks)
        return {bet: float(terms.rtp) for bet, terms in report.bets.items()}

    def load_rules(self, settings: Mapping[str, Any]) -> BaccaratRules:
        text = settings.get("paytable_toml") or default_paytable_text()
        if settings.get("game_rules"):
            raise RulesRefusal(
                "baccarat takes its terms from the paytable, not game_rules", code="bad_rules"
            )
        decks = int(settings.get("decks", 8))
        if not 6 <= decks <= 8:
            raise RulesRefusal(
                f"baccarat is dealt from 6 to 8 decks, not {decks}", code="bad_rules"
            )
        try:
            paytable = paytable_from_dict(tomllib.loads(text), source="table paytable")
        except (tomllib.TOMLDecodeError, RulesRefusal) as exc:
            raise RulesRefusal(f"paytable: {exc}", code="bad_rules") from exc
        return BaccaratRules(paytable, decks)

    def bet_types(self, rules: BaccaratRules) -> tuple[str, ...]:
        return BET_TYPES

    def seats(self, rules: BaccaratRules) -> int:
        return 0

    def check_bet(self, rules: BaccaratRules, bet: Bet, context: BettingContext) -> None:
        try:
            validate_bet(bet.bet_type, bet.stake, context.game_number, rules.paytable)
        except BetRefused as exc:
            raise RulesRefusal(exc.reason, code=exc.code) from exc

    def check_bets(
        self, rules: BaccaratRules, bets: Sequence[BetLike], context: BettingContext
    ) -> list[RulesRefusal | None]:
        """A baccarat bet's check reads its type and stake alone (with the game number and
        the paytable, the same for the whole request), so :meth:`check_bet` is asked once
        per distinct type and integer stake of the request: a batch of 5,000 bets is a
        handful of checks, where a record and a check per bet were a tenth of its time."""
        verdicts: dict[tuple[str, int], RulesRefusal | None] = {}
        refusals: list[RulesRefusal | None] = []
        for bet in bets:
            bet_type, stake = bet.bet_type, bet.stake
            plain = type(stake) is int and type(bet_type) is str  # True is not 1 here
            if plain and (bet_type, stake) in verdicts:
                refusals.append(verdicts[bet_type, stake])
                continue
            verdict: RulesRefusal | None = None
            try:
                self.check_bet(
                    rules, Bet(bet.bet_id, bet.account, bet_type, stake, bet.seat), context
                )
            except RulesRefusal as exc:
                verdict = exc.with_traceback(None)  # kept: no cycle through this frame
            if plain:
                verdicts[bet_type, stake] = verdict
            refusals.append(verdict)
        return refusals

    def burn_count(self, rules: BaccaratRules, first_card: Card) -> int:
        """Burn indicator: A=1, 2–9 face value, 10/J/Q/K = 10 (rules/baccarat.md)."""
        return min(first_card.rank, 10)

    # -- the round ---------------------------------------------------------------------------
    def new_round(self, rules: BaccaratRules, setup: RoundSetup) -> BaccaratRound:
        return BaccaratRound(rules, setup.round_id, setup.game_number, setup.bets)

    def next(self, state: BaccaratRound) -> Next:
        position = next_position(state.cards)
        return Complete() if position is None else Spot(position.value)

    def legal_actions(self, state: BaccaratRound, actor: str) -> tuple[Move, ...]:
        return ()

    def apply(self, state: BaccaratRound, item: Input) -> BaccaratRound:
        if isinstance(item, Move):
            raise RulesRefusal("baccarat takes no player decisions", code="no_decisions")
        if next_position(state.cards) is None:
            raise RulesRefusal(f"{item}: the round has all its cards", code="card_not_owed")
        return BaccaratRound(
            state.rules, state.round_id, state.game_number, state.bets, (*state.cards, item)
        )

    def timeout_action(self, state: BaccaratRound, actor: str) -> Move:
        raise RulesRefusal("baccarat has no decision timers", code="no_decisions")

    def placed_stakes(self, state: BaccaratRound) -> tuple[Stake, ...]:
        return tuple(Stake(b.bet_id, b.bet_id, b.bet_type, "original", b.stake) for b in state.bets)

    def _outcome(self, state: BaccaratRound, result: Outcome) -> dict[str, Any]:
        return {
            **result.to_json(),
            "natural": result.natural,
            "player_pair": result.player_pair,
            "banker_pair": result.banker_pair,
            "cards": [x.code for x in state.cards],
        }

    def settle(self, state: BaccaratRound) -> Settlement:
        if next_position(state.cards) is not None:
            raise RulesRefusal("the round still needs cards", code="round_not_complete")
        result = outcome(state.cards)
        lines = []
        # settle_bet is pure: a round's bets share a handful of (type, stake) pairs, so each
        # pair is settled once by the rules code and its answer reused: the line's fields
        # after the bet's own (result, returned, the case as its reason, and the defaults).
        settled_by: dict[tuple[str, int], tuple[Any, ...]] = {}
        paytable = state.rules.paytable
        for bet in state.bets:
            bet_id, bet_type, stake = bet.bet_id, bet.bet_type, bet.stake
            key = (bet_type, stake)
            tail = settled_by.get(key)
            if tail is None:
                settled = settle_bet(bet_type, stake, result, paytable)
                tail = settled_by[key] = (settled.result, settled.returned, settled.case, *_NO_SEAT)
            # the tuple made whole, not through the named tuple's __new__ (a Python call
            # with eleven arguments per bet)
            lines.append(_new_line(Line, (bet_id, bet_id, bet_type, "original", stake, *tail)))
        return Settlement(tuple(lines), self._outcome(state, result))

    def view(self, state: BaccaratRound, audience: Audience) -> dict[str, Any]:
        placed = list(zip(state.cards, _positions(state.cards), strict=True))
        player = [c.code for c, p in placed if p[0] == "P"]
        banker = [c.code for c, p in placed if p[0] == "B"]
        nxt = self.next(state)
        return {
            "game": self.name,
            "player": {"cards": player},
            "banker": {"cards": banker},
            "next": nxt.to_json(),
        }

    # -- recall ------------------------------------------------------------------------------
    def settle_input(
        self, state: BaccaratRound, setup: RoundSetup, moves: Sequence[Move]
    ) -> dict[str, Any]:
        return {
            "round": setup.round_id,
            "game_number": setup.game_number,
            "cards": [c.code for c in state.cards],
            "bets": [{"id": b.bet_id, "type": b.bet_type, "stake": b.stake} for b in setup.bets],
        }

    def recompute(self, rules: BaccaratRules, settle_input: Mapping[str, Any]) -> Settlement:
        try:
            answer = settle_request(settle_input, rules.paytable)
        except RulesRefusal as exc:
            raise RulesRefusal(exc.reason, code="bad_settle_input") from exc
        lines = tuple(
            Line(b["id"], b["id"], b["type"], "original", b["stake"], b["result"], b["returned"])
            for b in answer["bets"]
        )
        outcome_json = {k: answer[k] for k in ("player", "banker", "winner")}
        return Settlement(lines, outcome_json)


_new_line = tuple.__new__
_NO_SEAT = (None, None, 0)  # a baccarat line's seat, hand and commission


def _positions(cards: Sequence[Card]) -> list[str]:
    out = []
    for n in range(len(cards)):
        position = next_position(cards[:n])
        out.append(position.value if position else "-")
    return out


GAME = BaccaratGame()
