"""Recompute one recorded round from its cards and decisions (``livetable settle xidach``).

The recorded decisions are fed through the same engine that ran the live table, so a
replay that disagrees with the live ledger points at a defect, not at two rule copies.
Cards are consumed only when the engine asks for one; a round that needs more cards or
decisions than recorded, or records decisions after it ended, is an error line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from table_service.rules.cards import parse_cards
from table_service.rules.xidach.actions import (
    BANKER,
    Action,
    Actor,
    Check,
    Deal,
    Double,
    HandRef,
    Hide,
    Hit,
    Leave,
    NoDecision,
    Split,
    Stand,
    Surrender,
)
from table_service.rules.xidach.engine import apply, awaiting, new_round, next_card_target
from table_service.rules.xidach.errors import IncompleteRoundError, XiDachError
from table_service.rules.xidach.profile import Profile, load_profile
from table_service.rules.xidach.settlement import Settlement, settle
from table_service.rules.xidach.state import Phase, RoundState, SeatBet, TableLimits

_BANKER_ACTIONS: dict[str, Callable[[Actor], Action]] = {
    "hit": Hit,
    "stand": Stand,
    "no_decision": NoDecision,
}
_PUNTER_ACTIONS: dict[str, Callable[[HandRef], Action]] = {
    "hit": Hit,
    "stand": Stand,
    "double": Double,
    "split": Split,
    "surrender": Surrender,
    "no_decision": NoDecision,
}


class InputError(XiDachError):
    """A settle input line that does not describe a round."""


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer, got {value!r}")
    return value


def parse_decision(entry: Any, number: int) -> Action:
    """One recorded decision: ``{"seat": 1, "hand": 1, "action": "hit"}`` or the banker's."""
    where = f"decision {number}"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected an object, got {entry!r}")
    action = entry.get("action")
    seat = entry.get("seat")
    if seat == BANKER:
        if action in ("hit", "stand", "no_decision"):
            return _BANKER_ACTIONS[action](BANKER)
        if action == "check":
            target = entry.get("target", "all")
            return Check(None if target == "all" else _int(target, f"{where}: target"))
        if action == "leave":
            return Leave(BANKER)
        raise InputError(f"{where}: unknown banker action {action!r} (hit, stand, check, leave)")
    seat = _int(seat, f"{where}: seat")
    if action == "leave":
        return Leave(seat)
    if action == "hide":
        return Hide(seat)
    kind = _PUNTER_ACTIONS.get(action) if isinstance(action, str) else None
    if kind is None:
        names = ", ".join([*_PUNTER_ACTIONS, "leave", "hide"])
        raise InputError(f"{where}: unknown punter action {action!r} ({names})")
    return kind(HandRef(seat, _int(entry.get("hand", 1), f"{where}: hand")))


def start_round(request: dict[str, Any], profile: Profile) -> RoundState:
    seats = request.get("seats")
    if not isinstance(seats, list) or not seats:
        raise InputError("'seats' must be a non-empty list of {seat, stake[, id, hidden]}")
    bets = []
    for i, entry in enumerate(seats, start=1):
        if not isinstance(entry, dict):
            raise InputError(f"seats[{i}] must be an object")
        bet_id = entry.get("id")
        if bet_id is not None and not isinstance(bet_id, str):
            raise InputError(f"seats[{i}].id must be a string")
        bets.append(
            SeatBet(
                seat=_int(entry.get("seat"), f"seats[{i}].seat"),
                stake=_int(entry.get("stake"), f"seats[{i}].stake"),
                bet_id=bet_id,
                hidden=bool(entry.get("hidden", False)),
            )
        )
    limits = None
    table = request.get("table")
    if table is not None:
        if not isinstance(table, dict):
            raise InputError("'table' must be an object {min_bet, max_bet}")
        limits = TableLimits(
            _int(table.get("min_bet"), "table.min_bet"), _int(table.get("max_bet"), "table.max_bet")
        )
    banker = request.get("banker", "house")
    banker_seat = banker_balance = None
    if banker != "house":
        if not isinstance(banker, dict):
            raise InputError("'banker' must be \"house\" or {seat, balance}")
        banker_seat = _int(banker.get("seat"), "banker.seat")
        banker_balance = _int(banker.get("balance"), "banker.balance")
    return new_round(
        profile, bets, banker_seat=banker_seat, banker_balance=banker_balance, limits=limits
    )


def line_profile(request: dict[str, Any], default: Profile | None) -> Profile:
    """The line's ``profile`` if given (it must agree with ``--profile``), else the default."""
    name = request.get("profile")
    if name is None:
        if default is None:
            raise InputError('no profile: pass --profile or give "profile" in the line')
        return default
    if not isinstance(name, str):
        raise InputError("'profile' must be a profile name")
    if default is not None and name != default.name:
        raise InputError(f"line names profile {name!r} but the command runs {default.name!r}")
    return default if default is not None else load_profile(name)


def replay(request: dict[str, Any], default: Profile | None) -> tuple[Settlement, list[str]]:
    """Play a recorded round to its end; returns the settlement and the unused cards."""
    state, unused = play(request, default)
    return settle(state), unused


def final_state(request: dict[str, Any], default: Profile | None) -> RoundState:
    """The state a recorded round ends in."""
    return play(request, default)[0]


def play(request: dict[str, Any], default: Profile | None) -> tuple[RoundState, list[str]]:
    """Fold a recorded round through the engine; returns its final state and unused cards."""
    profile = line_profile(request, default)
    codes = request.get("cards")
    if not isinstance(codes, list):
        raise InputError("'cards' must be a list of card codes in shoe order")
    cards = parse_cards(codes)
    decisions = request.get("decisions", [])
    if not isinstance(decisions, list):
        raise InputError("'decisions' must be a list")
    state = start_round(request, profile)
    next_card = next_decision = 0
    while state.phase is not Phase.SETTLED:
        target = next_card_target(state)
        if target is not None:
            if next_card >= len(cards):
                raise IncompleteRoundError(
                    f"too few cards: {len(cards)} given, the next card belongs to {target}"
                )
            state = _step(state, Deal(cards[next_card]), f"card {next_card + 1}")
            next_card += 1
            continue
        if next_decision >= len(decisions):
            raise IncompleteRoundError(
                f"round incomplete after {len(decisions)} decision(s): awaiting a decision "
                f"by {awaiting(state)}"
            )
        action = parse_decision(decisions[next_decision], next_decision + 1)
        state = _step(state, action, f"decision {next_decision + 1}")
        next_decision += 1
    if next_decision < len(decisions):
        raise InputError(
            f"decision {next_decision + 1} comes after the round was settled "
            f"({len(decisions) - next_decision} extra)"
        )
    return state, [c.code for c in cards[next_card:]]


def _step(state: RoundState, action: Action, where: str) -> RoundState:
    try:
        return apply(state, action)
    except XiDachError as exc:
        raise type(exc)(f"{where}: {exc.reason}") from exc


def settlement_to_json(settlement: Settlement, round_id: Any, unused: list[str]) -> dict[str, Any]:
    banker: dict[str, Any] = {
        "seat": settlement.bank.seat if settlement.bank else "house",
        "cards": [c.code for c in settlement.banker_cards],
    }
    if settlement.banker_value is not None:
        banker["classification"] = settlement.banker_value.kind.value
        banker["total"] = settlement.banker_value.total
    hands = []
    bets: dict[int, dict[str, Any]] = {}
    for h in settlement.hands:
        hands.append(
            {
                "seat": h.seat,
                "hand": h.hand,
                "cards": [c.code for c in h.cards],
                "classification": h.value.kind.value,
                "total": h.value.total,
                "stake": h.stake,
                "result": h.result.value,
                "settled_by": h.basis.value,
                "returned": h.returned,
                "shortfall": h.shortfall,
                "commission": h.commission,
            }
        )
        bet = bets.setdefault(
            h.seat, {"id": h.bet_id, "seat": h.seat, "stake": 0, "returned": 0, "commission": 0}
        )
        bet["stake"] += h.stake
        bet["returned"] += h.returned
        bet["commission"] += h.commission
    out: dict[str, Any] = {
        "round": round_id,
        "profile": settlement.profile,
        "banker": banker,
        "hands": hands,
        "bets": list(bets.values()),
        "unused_cards": unused,
    }
    if settlement.bank is not None:
        b = settlement.bank
        out["bank"] = {
            "seat": b.seat,
            "balance_before": b.balance_before,
            "balance_after": b.balance_after,
            "shortfall": b.shortfall,
            "keeps_bank": b.keeps_bank,
            "left": b.left,
        }
    return out


def handle_line(request: dict[str, Any], default: Profile | None) -> dict[str, Any]:
    """One settle input line to one output line (errors propagate to ``run_jsonl``)."""
    settlement, unused = replay(request, default)
    return settlement_to_json(settlement, request.get("round"), unused)
