"""What the consoles show, built from the table's summary and its log.

The pages render these shapes and compute nothing of the game themselves: where each card
sits and the hands' totals come from the rules code, so a console can never disagree with
the settlement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from audit.store import StoredEvent
from table_service.rules.baccarat import hand_total, positions
from table_service.rules.baccarat.roads import RoadResult, roads
from table_service.rules.cards import CardError, parse_card

# What the dealer may report, with the procedure each one starts (rules/baccarat.md).
# The kinds are those the table accepts from a dealer; the table answers with the
# procedure it applied, which is what the supervisor console shows.
DEALER_INCIDENTS = (
    "missed_scan",
    "multi_pull",
    "cards_exposed",
    "card_exposed_in_shoe",
    "shuffle_card_dropped",
    "other",
)

# The procedure for the table-level incidents (whatever the game), shown where the raised
# incident carries none of its own (the dealer-reported kinds carry the rule they quote).
TABLE_PROCEDURES = {
    "foreign_card": "A card the shoe cannot hold (more copies than decks): the card is set "
    "aside; the supervisor checks the shoe, then voids the round or changes the shoe.",
    "unreadable_card": "The reader could not read a card: the supervisor enters the card "
    "at its shoe-order index from the card itself.",
    "possible_missed_card": "The reader skipped a sequence number: the supervisor looks at the "
    "cards on the table and enters the missed card at its shoe-order index (rule 6).",
    "possible_duplicate": "A card may have been sent twice after a reconnection: the "
    "supervisor checks the cards on the table and re-orders or voids.",
    "reader_offline": "The shoe reader is offline: dealing pauses; the supervisor restores "
    "the reader or enters the cards by hand, then resolves.",
    "hardware_alarm": "The shoe raised an alarm: the supervisor inspects the shoe before "
    "dealing goes on.",
    "shoe_empty": "The shoe is empty: the supervisor ends the shoe and inserts a new one; a "
    "round that cannot be completed is voided and refunded.",
}


def procedure_for(kind: str | None, details: Mapping[str, Any] | None) -> str | None:
    text = (details or {}).get("procedure")
    if text:
        return str(text)
    return TABLE_PROCEDURES.get(kind or "")


def game_of(summary: Mapping[str, Any], config: Mapping[str, Any] | None) -> str:
    game = summary.get("game") or (config or {}).get("game") or "baccarat"
    return str(game)


def baccarat_layout(cards: Sequence[str]) -> dict[str, Any]:
    """Cards by position with each hand's total (cards in shoe order)."""
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


def console_view(
    summary: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    *,
    audience: str,
    game_view: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary with the round laid out for ``audience`` (``public`` or ``dealer``).

    Baccarat is laid out here by position with each hand's total, from the rules; any
    other game's own view for that audience (``game_view``, from the game's ``view``) is
    passed through as the layout.
    """
    game = game_of(summary, config)
    rnd = summary.get("round") or None
    view: dict[str, Any] = {
        "table_id": summary.get("table_id"),
        "game": game,
        "opened": summary.get("opened"),
        "paused": bool(summary.get("paused")),
        "reader_online": bool(summary.get("reader_online")),
        "last_seq": summary.get("last_seq", 0),
        "shoe": _public_shoe(summary.get("shoe")),
        "round": None,
    }
    if rnd is not None:
        round_view: dict[str, Any] = {
            "round_id": rnd.get("round_id"),
            "game_number": rnd.get("game_number"),
            "phase": rnd.get("phase"),
            "deadline": rnd.get("deadline") or rnd.get("closes_at"),
            "closes_at": rnd.get("closes_at"),
            "next": _next_target(rnd),
            "turn": _turn(rnd),
            "outcome": rnd.get("outcome"),
        }
        if game == "baccarat":
            round_view["layout"] = baccarat_layout(rnd.get("cards") or [])
        else:
            chosen = game_view if game_view is not None else rnd.get("view")
            round_view["layout"] = dict(chosen) if isinstance(chosen, Mapping) else {}
        if audience == "dealer":
            round_view["cards"] = list(rnd.get("cards") or [])
            round_view["legal_actions"] = rnd.get("legal_actions")
        view["round"] = round_view
    if audience == "dealer":
        view["incidents"] = [
            {
                "incident_id": i.get("incident_id"),
                "kind": i.get("kind"),
                "blocking": i.get("blocking"),
                "procedure": procedure_for(i.get("kind"), i.get("details")),
                "round_id": i.get("round_id"),
                "details": {k: v for k, v in (i.get("details") or {}).items() if k != "procedure"},
            }
            for i in summary.get("incidents") or []
        ]
        view["dealer_incidents"] = list(DEALER_INCIDENTS)
    else:
        view["incidents"] = [
            {"kind": i.get("kind"), "blocking": i.get("blocking")}
            for i in summary.get("incidents") or []
            if i.get("blocking")
        ]
    return view


def _public_shoe(shoe: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if shoe is None:
        return None
    keys = ("shoe_no", "ready", "cut_card_drawn", "games", "cards_seen", "burn_remaining")
    return {k: shoe.get(k) for k in keys}


def _next_target(rnd: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where the next card goes (``code``, ``seat``, ``hand``, ``face_up``), or None when
    no card is owed (a decision is awaited, the round is complete)."""
    target = rnd.get("next")
    if isinstance(target, Mapping):
        if target.get("kind", "card") == "card" and target.get("code"):
            return dict(target)
        return None
    position = rnd.get("next_position")
    if isinstance(position, str) and position:
        return {"kind": "card", "code": position}
    return None


def _turn(rnd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The decision awaited: who, the legal actions, and the recorded deadline."""
    turn = rnd.get("turn")
    if isinstance(turn, Mapping):
        return dict(turn)
    target = rnd.get("next")
    if isinstance(target, Mapping) and target.get("kind") == "decision":
        return {k: v for k, v in target.items() if k != "kind"}
    if isinstance(target, Mapping) and target.get("kind") == "supervisor":
        return {"actors": ["supervisor"], "cards_not_taken": target.get("cards_not_taken")}
    return None


def shoe_roads(outcomes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return roads(RoadResult.from_outcome(o) for o in outcomes).to_json()


# -- recall --------------------------------------------------------------------------------


def recall_round(
    row: Mapping[str, Any],
    events: Sequence[StoredEvent],
    dealer: str | None,
    *,
    bet_limit: int = 500,
) -> dict[str, Any]:
    """One round's record, every step in log order, for a regulator."""
    steps: list[dict[str, Any]] = []
    bets: list[dict[str, Any]] = []
    settlement: list[dict[str, Any]] = []
    incidents: dict[str, dict[str, Any]] = {}
    bets_total = 0
    bet_events: dict[str, dict[str, Any]] = {}
    for e in events:
        base = {"seq": e.seq, "ts": e.ts, "type": e.type, "actor": e.actor}
        p = e.payload
        if e.type == "card_dealt":
            steps.append(
                {
                    **base,
                    "card": p.get("card"),
                    "position": p.get("position"),
                    "index": p.get("index"),
                    "source": p.get("source"),
                    "reader": e.actor.split(":", 1)[1] if e.actor.startswith("reader:") else None,
                    "reader_seq": p.get("reader_seq"),
                }
            )
        elif e.type == "bets_placed":
            for b in p.get("bets", []):
                bets_total += 1
                item = {
                    "bet_id": b.get("bet_id"),
                    "account": b.get("account"),
                    "type": b.get("type"),
                    "stake": b.get("stake"),
                    "ts": e.ts,
                    "seq": e.seq,
                    "accepted": True,
                    "by": e.actor,
                }
                bet_events[str(b.get("bet_id"))] = item
                if len(bets) < bet_limit:
                    bets.append(item)
            steps.append({**base, "bets": len(p.get("bets", []))})
        elif e.type == "bets_settled" or e.type == "bets_refunded":
            key = "results" if e.type == "bets_settled" else "refunds"
            for line in p.get(key, []):
                if len(settlement) < bet_limit:
                    settlement.append(
                        {
                            "bet_id": line.get("bet_id"),
                            "type": line.get("type"),
                            "stake": line.get("stake"),
                            "result": line.get("result") or "refunded",
                            "returned": line.get("returned", line.get("amount")),
                            "reason": p.get("reason") or line.get("reason"),
                            "seq": e.seq,
                            "ts": e.ts,
                        }
                    )
            steps.append({**base, "lines": len(p.get(key, []))})
        elif e.type == "incident_raised":
            incident = {
                "incident_id": p.get("incident_id"),
                "kind": p.get("kind"),
                "blocking": p.get("blocking"),
                "raised_by": p.get("raised_by") or e.actor,
                "raised_at": e.ts,
                "procedure": procedure_for(p.get("kind"), p.get("details")),
                "details": p.get("details"),
                "resolved_by": None,
                "resolution": None,
            }
            if p.get("auto_resolution"):
                incident["resolution"] = p.get("auto_resolution")
                incident["resolved_by"] = "system"
            incidents[str(p.get("incident_id"))] = incident
            steps.append({**base, "incident_id": p.get("incident_id"), "kind": p.get("kind")})
        elif e.type == "incident_resolved":
            found = incidents.get(str(p.get("incident_id")))
            if found is not None:
                found["resolution"] = p.get("resolution")
                found["resolved_by"] = p.get("resolved_by") or e.actor
                found["resolved_at"] = e.ts
            steps.append({**base, "incident_id": p.get("incident_id")})
        else:
            detail = {k: v for k, v in p.items() if k not in ("round_id", "config") and _small(v)}
            steps.append({**base, "details": detail})
    outcome = row.get("outcome")
    return {
        "round_id": row.get("round_id"),
        "game_number": row.get("game_number"),
        "shoe_no": row.get("shoe_no"),
        "phase": row.get("phase"),
        "dealer": dealer,
        "cards": row.get("cards"),
        "outcome": outcome,
        "void_reason": row.get("void_reason"),
        "steps": steps,
        "bets": bets,
        "bets_total": bets_total,
        "settlement": settlement,
        "incidents": list(incidents.values()),
        "settle_input": row.get("settle_input")
        or _baccarat_settle_input(row, list(bet_events.values())),
    }


def _small(value: Any) -> bool:
    return not isinstance(value, list | dict) or len(str(value)) < 400


def _baccarat_settle_input(row: Mapping[str, Any], bets: list[dict[str, Any]]) -> dict[str, Any]:
    """The round as ``livetable settle baccarat`` reads it (specs/settle-jsonl.md)."""
    return {
        "round": row.get("round_id"),
        "game_number": row.get("game_number"),
        "cards": list(row.get("cards") or []),
        "bets": [{"id": b["bet_id"], "type": b["type"], "stake": b["stake"]} for b in bets],
    }
