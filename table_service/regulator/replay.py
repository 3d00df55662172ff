"""Rounds recomputed from the log alone, through the rules code that settled them live.

Each round's settle input (exactly what ``livetable settle <game>`` reads) is folded from
its events — never from read models — and settled again by the game's own settle path;
every recomputed return is compared with the return the log recorded and with the one
the ledger holds. A payout rewritten by an insider who re-signed the whole chain still
disagrees with the cards, and is named.

Every game of the registry (``rules/games.py``) replays the same way: the table's own fold
of the round's events gives the settle input, the game's ``recompute`` settles it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from audit.canonical import canonical_json
from audit.verify import EventRecord, event_payload
from table_service.table import events as ev
from table_service.table.events import parse_known


class ReplayError(ValueError):
    """A round that cannot be replayed or whose recomputation disagrees with the record."""

    def __init__(self, round_id: str, detail: str, bet_id: str | None = None) -> None:
        where = f"round {round_id}" + (f", bet {bet_id}" if bet_id else "")
        super().__init__(f"{where}: {detail}")
        self.round_id = round_id
        self.bet_id = bet_id
        self.detail = detail


@dataclass
class BetRecord:
    bet_id: str
    account: str
    type: str
    stake: int
    status: str = "open"  # open | settled | refunded
    result: str | None = None
    returned: int | None = None
    commission: int = 0  # the house's share of the win, out of ``returned`` (own line)

    def to_json(self) -> dict[str, Any]:
        return {
            "bet_id": self.bet_id,
            "account": self.account,
            "type": self.type,
            "stake": self.stake,
            "status": self.status,
            "result": self.result,
            "returned": self.returned,
        }


@dataclass
class RoundFold:
    """What the events say about one round."""

    game: str
    table_id: str
    round_id: str
    rules_ref: str
    game_number: int | None = None
    cards: list[str] = field(default_factory=list)
    status: str = "open"  # open | settled | voided
    bets: dict[str, BetRecord] = field(default_factory=dict)
    settled_bets: list[str] = field(default_factory=list)  # in the order the round settled them
    first_seq: int = 0
    started: str = ""
    shoe_no: int = 0
    events: list[tuple[str, dict[str, Any], int]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    early_bets: set[str] = field(default_factory=set)  # settled during the round (a check)
    _settle_input: tuple[dict[str, Any] | None] | None = field(default=None, repr=False)
    _round: Any = field(default=None, repr=False)

    def _folded(self) -> Any:
        """The round folded from its events by the table's own fold
        (``table_service.table.state``) under the configuration it opened with."""
        if self._round is not None:
            return self._round
        from table_service.table.state import ShoeState, TableState, apply

        decks = int(self.config.get("decks", 8))
        shoe = ShoeState(self.shoe_no, decks)
        state = TableState(self.table_id, config=self.config, shoe=shoe)
        for kind, payload, seq in self.events:
            state = apply(state, kind, payload, seq)
        if state.round is None:
            raise ReplayError(self.round_id, "its events do not make a round")
        self._round = state.round
        return state.round

    def settle_input(self) -> dict[str, Any] | None:
        """The line ``livetable settle <game>`` takes, folded from this round's events:
        cards in shoe order, bets, decisions in order. None for a round voided before
        any card."""
        if self._settle_input is not None:
            return self._settle_input[0]
        from table_service.table.state import settle_input_of

        line = settle_input_of(self._folded())
        self._settle_input = (line,)
        return line

    def settled_early(self) -> dict[str, tuple[str, int]]:
        """``{stake id: (result, returned)}`` of the stakes the game's own rules settle
        before the round ends (a Xì Dách check), from the round's cards and decisions:
        what a round voided after a check must have paid, and nothing else."""
        rnd = self._folded()
        if rnd.play is None:
            return {}
        early = rnd.game.settled_early(rnd.play.state)
        return {ln.stake_id: (ln.result, ln.returned) for ln in early}

    def may_forfeit(self, bet: BetRecord) -> bool:
        """Whether the round's own events allow ``bet`` to be forfeited (baccarat rule 8):
        an insurance-type wager of the table's configuration, in a round where an incident
        whose procedure forfeits insurance was raised. The cards do not decide it."""
        if bet.type not in tuple(self.config.get("insurance_bet_types") or ()):
            return False
        from table_service.rules.games import UnknownGame, find_game

        try:
            catalogue = find_game(self.game).incidents
        except UnknownGame:
            return False
        for kind, payload, _ in self.events:
            if parse_known(kind, payload).__class__ is ev.IncidentRaised:
                entry = catalogue.get(str(payload.get("kind")))
                if entry is not None and "forfeit_insurance" in entry.effects:
                    return True
        return False


_RULES: dict[tuple[str, str], Any] = {}


def settle(
    game_name: str, config: Mapping[str, Any], settle_input: Mapping[str, Any]
) -> dict[str, tuple[str, int]]:
    """``{stake id: (result, returned)}`` from the game's live settle path."""
    from table_service.table.config import config_from_snapshot

    key = (game_name, rules_hash(config))
    found = _RULES.get(key)
    if found is None:
        # The recorded configuration parsed exactly as the live table parses it.
        table_config = config_from_snapshot(dict(config))
        if table_config.game != game_name:
            raise ValueError(f"the rules in force are for {table_config.game}, not {game_name}")
        found = (table_config.game_impl, table_config.rules)
        _RULES[key] = found
    game, rules = found
    settlement = game.recompute(rules, settle_input)
    return {line.stake_id: (line.result, line.returned) for line in settlement.lines}


def rules_hash(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(config))).hexdigest()


@dataclass
class Folded:
    rounds: dict[str, RoundFold]
    rules: dict[str, dict[str, Any]]  # rules_ref → the table configuration in force


def fold_rounds(events: Iterable[EventRecord]) -> Folded:
    """Fold every round of the events (in sequence order) into its settle facts."""
    from table_service.rules.games import DEFAULT_GAME  # the rules, when a log is read

    rounds: dict[str, RoundFold] = {}
    rules: dict[str, dict[str, Any]] = {}
    in_force: dict[str, str] = {}  # table → rules_ref
    for event in events:
        kind = event.type
        p = event_payload(event)
        typed = parse_known(kind, p)  # a table event as its class (the ledger's: None)
        if isinstance(typed, ev.TableOpened):
            opened = f"{event.table_id}@{event.seq}"
            rules[opened] = p["config"]
            in_force[event.table_id] = opened
            continue
        if isinstance(typed, ev.BettingOpened):
            ref = in_force.get(event.table_id)
            if ref is None:
                raise ReplayError(typed.round_id, "no table_opened event before the round")
            game = str(rules[ref].get("game", DEFAULT_GAME))
            opening = typed.round_id
            shoe_no = ev.given(typed.shoe_no, None) or int(
                opening.rsplit("-s", 1)[1].split("-g")[0]
            )
            rounds[opening] = RoundFold(
                game=game,
                table_id=event.table_id,
                round_id=opening,
                rules_ref=ref,
                game_number=typed.game_number,
                first_seq=event.seq,
                started=event.ts,
                shoe_no=int(shoe_no),
                events=[(kind, p, event.seq)],
                config=rules[ref],
            )
            continue
        round_id = event.round_id or (p.get("round_id") if isinstance(p, dict) else None)
        fold = rounds.get(round_id) if round_id else None
        if fold is not None:
            fold.events.append((kind, p, event.seq))
        if isinstance(typed, ev.CardSetAside) and typed.from_round in rounds:
            rounds[str(typed.from_round)].cards = list(ev.required(typed.round_cards))
            continue
        if fold is None:
            continue
        match typed:
            case ev.BetsPlaced(bets=bets):
                for b in bets:
                    if b["bet_id"] in fold.bets:
                        raise ReplayError(fold.round_id, "placed twice", b["bet_id"])
                    record = BetRecord(b["bet_id"], b["account"], b["type"], b["stake"])
                    fold.bets[b["bet_id"]] = record
            case ev.CardDealt(card=card):
                fold.cards.append(card)
            case ev.CardsRearranged(cards=cards):
                fold.cards = list(cards)
            case ev.BetsSettled(results=items):
                _close(fold, items, "settled", early=bool(typed.early))
            case ev.BetsRefunded(refunds=items):
                _close(fold, items, "refunded", early=False)
            case ev.RoundSettled():
                fold.status = "settled"
            case ev.RoundVoided():
                fold.status = "voided"
    return Folded(rounds, rules)


def _close(
    fold: RoundFold, items: Iterable[Mapping[str, Any]], status: str, *, early: bool
) -> None:
    """Bets settled or refunded: each closed once, and only a bet the round placed."""
    for item in items:
        bet = fold.bets.get(item["bet_id"])
        if bet is None:
            raise ReplayError(fold.round_id, f"{status} but never placed", item["bet_id"])
        if bet.status != "open":
            raise ReplayError(fold.round_id, f"closed twice ({bet.status}, {status})", bet.bet_id)
        bet.status = status
        bet.result = item.get("result", "refunded")
        bet.returned = item["returned"]
        bet.commission = int(item.get("commission", 0))
        if status == "settled":
            fold.settled_bets.append(bet.bet_id)
            if early:
                fold.early_bets.add(bet.bet_id)


@dataclass
class ReplayTotals:
    rounds: int = 0
    bets: int = 0
    staked: int = 0
    returned: int = 0


def replay_round(
    fold: RoundFold,
    rules: Mapping[str, Any],
    recorded: Mapping[str, Mapping[str, Any]] | None,
    totals: ReplayTotals,
) -> None:
    """Recompute one closed round; raise :class:`ReplayError` at the first difference.

    ``recorded`` is the ledger's view (bet id → stake, result, returned); None skips it.
    """
    if fold.status == "open":
        return
    if fold.status == "settled":
        settle_input = fold.settle_input()
        if settle_input is None:
            raise ReplayError(fold.round_id, "settled, but its events give no settle input")
        try:
            recomputed = settle(fold.game, rules, settle_input)
        except Exception as exc:  # the rules code refusing the round is itself a finding
            raise ReplayError(fold.round_id, f"the rules code cannot settle it: {exc}") from exc
    elif fold.early_bets:  # voided after a check: the checked stakes stood
        try:
            recomputed = fold.settled_early()
        except Exception as exc:
            raise ReplayError(fold.round_id, f"the rules code cannot settle it: {exc}") from exc
    else:
        recomputed = {}
    for bet in fold.bets.values():
        if bet.status == "open":
            raise ReplayError(
                fold.round_id, f"round {fold.status} but the bet is still open", bet.bet_id
            )
        if bet.status == "refunded":
            expected = ("refunded", bet.stake)
        else:
            if fold.status == "voided" and bet.bet_id not in fold.early_bets:
                raise ReplayError(fold.round_id, "settled in a voided round", bet.bet_id)
            if bet.result == "forfeited":
                if not fold.may_forfeit(bet):
                    raise ReplayError(
                        fold.round_id,
                        "forfeited without the procedure that forfeits it",
                        bet.bet_id,
                    )
                expected = ("forfeited", 0)
            elif bet.bet_id not in recomputed:
                raise ReplayError(fold.round_id, "settled but not in the settle input", bet.bet_id)
            else:
                expected = recomputed[bet.bet_id]
        logged = (bet.result, bet.returned)
        if logged != expected:
            raise ReplayError(
                fold.round_id,
                f"the log records {logged[0]} returning {logged[1]}, the rules give "
                f"{expected[0]} returning {expected[1]}",
                bet.bet_id,
            )
        if recorded is not None:
            ledger = recorded.get(bet.bet_id)
            if ledger is None:
                raise ReplayError(fold.round_id, "missing from the recorded ledger", bet.bet_id)
            seen = (ledger.get("stake"), ledger.get("result"), ledger.get("returned"))
            want = (bet.stake, expected[0], expected[1])
            if seen != want:
                raise ReplayError(
                    fold.round_id,
                    f"the ledger records stake {seen[0]}, {seen[1]} returning {seen[2]}; "
                    f"the rules give stake {want[0]}, {want[1]} returning {want[2]}",
                    bet.bet_id,
                )
        totals.bets += 1
        totals.staked += bet.stake
        totals.returned += expected[1]
    if recorded is not None:
        extra = sorted(set(recorded) - set(fold.bets))
        if extra:
            raise ReplayError(fold.round_id, "in the ledger but never placed in the log", extra[0])
    totals.rounds += 1
