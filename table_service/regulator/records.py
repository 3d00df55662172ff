"""Per-round records and shoe reconciliations, folded from the log (UK RTS 17, AGCO 4.02).

A round's record names its table, the dealer(s) and supervisor(s) who acted in it, its
shoe, each card's index in that shoe and its source (the shoe's reader, a card carried
from the previous round, a supervisor's manual entry) and the hash of the rules in
force. A shoe's reconciliation sets the cards seen, by rank and suit, against the shoe's
composition: burnt, dealt, set aside, remaining, and every foreign, duplicate or
unreadable card. Both come from the events alone, so a regulator's copy reproduces them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from table_service.regulator.replay import rules_hash
from table_service.table import events as ev
from table_service.table.events import REGISTRY

RANKS = "A23456789TJQK"
SUITS = "SHDC"


def card_source(actor: str) -> str:
    """Where a dealt card was read: the shoe's reader, a camera, or typed at a console."""
    kind, _, name = actor.partition(":")
    if kind == "camera" or (kind == "reader" and "camera" in name):
        return "camera"
    if kind == "reader":
        return "shoe"
    return "manual"


def _payload(event: Any) -> dict[str, Any]:
    raw = event.payload
    payload: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
    return payload


@dataclass
class _Shoe:
    table_id: str
    shoe_no: int
    decks: int
    inserted_seq: int
    taken: int = 0  # cards out of the shoe so far (its running index)
    burnt: Counter[str] = field(default_factory=Counter)
    dealt: Counter[str] = field(default_factory=Counter)
    set_aside: Counter[str] = field(default_factory=Counter)
    foreign: list[str] = field(default_factory=list)
    # A reader's possible duplicate may come without the card it saw.
    duplicates: list[str | None] = field(default_factory=list)
    unreadable: int = 0
    ended: str | None = None
    ended_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        composition = {r + s: self.decks for r in RANKS for s in SUITS}
        seen: Counter[str] = Counter()
        for counter in (self.burnt, self.dealt, self.set_aside):
            for code, n in counter.items():
                seen[code] += n
        remaining = {
            code: composition[code] - seen.get(code, 0)
            for code in composition
            if composition[code] - seen.get(code, 0)
        }
        over = sorted(code for code in seen if seen[code] > composition.get(code, 0))
        return {
            "table_id": self.table_id,
            "shoe_no": self.shoe_no,
            "decks": self.decks,
            "ended": self.ended,
            "burnt": sum(self.burnt.values()),
            "dealt": sum(self.dealt.values()),
            "set_aside": sum(self.set_aside.values()),
            "remaining": sum(remaining.values()),
            "by_card": {
                code: {
                    "shoe": composition[code],
                    "burnt": self.burnt.get(code, 0),
                    "dealt": self.dealt.get(code, 0),
                    "set_aside": self.set_aside.get(code, 0),
                    "remaining": composition[code] - seen.get(code, 0),
                }
                for code in composition
            },
            "over_composition": over,
            "foreign": self.foreign,
            "duplicates": self.duplicates,
            "unreadable": self.unreadable,
        }


@dataclass
class Records:
    rounds: dict[str, dict[str, Any]]
    shoes: list[dict[str, Any]]


_READ: frozenset[type[ev.TableEvent]] = frozenset(
    {
        ev.TableOpened,
        ev.ShoeInserted,
        ev.ShoeEnded,
        ev.CardBurnt,
        ev.CardSetAside,
        ev.IncidentRaised,
        ev.BettingOpened,
        ev.CardDealt,
        ev.CardsRearranged,
    }
)


def fold_records(events: Iterable[Any]) -> Records:
    rounds: dict[str, dict[str, Any]] = {}
    shoes: list[_Shoe] = []
    current: dict[str, _Shoe] = {}
    config_hash: dict[str, str] = {}
    carried: dict[str, list[tuple[str, int | None]]] = {}

    def person(record: dict[str, Any], actor: str) -> None:
        role = actor.split(":", 1)[0]
        key = {"dealer": "dealers", "supervisor": "supervisors"}.get(role)
        if key and actor not in record[key]:
            record[key].append(actor)

    for event in events:
        table = event.table_id
        p = _payload(event)
        # the classes the records read, each as its class (another type's payload, such as a
        # bet's, is not read: a shoe's reconciliation reads the log without them)
        cls = REGISTRY.get(event.type)
        x = cls.from_payload(p) if cls is not None and cls in _READ else None
        shoe = current.get(table)
        if isinstance(x, ev.TableOpened):
            config_hash[table] = rules_hash(x.config)
        elif isinstance(x, ev.ShoeInserted):
            shoe = _Shoe(table, int(x.shoe_no), int(x.decks), event.seq)
            current[table] = shoe
            shoes.append(shoe)
        elif isinstance(x, ev.ShoeEnded) and shoe is not None:
            shoe.ended, shoe.ended_seq = ev.given(x.reason, None), event.seq
            current.pop(table, None)
        elif isinstance(x, ev.CardBurnt) and shoe is not None:
            shoe.taken += 1
            if x.card:
                shoe.burnt[x.card] += 1
            if x.unreadable:
                shoe.unreadable += 1
        elif isinstance(x, ev.CardSetAside) and shoe is not None:
            card: str = x.card  # every card_set_aside names its card
            from_round = ev.given(x.from_round, None)
            index: int | None = None
            if from_round in rounds:
                # dealt in that round but not needed by it: out of the round, set aside
                cards = rounds[from_round]["cards"]
                for position in range(len(cards) - 1, -1, -1):
                    if cards[position]["card"] == card:
                        index = cards.pop(position)["shoe_index"]
                        break
                shoe.dealt[card] -= 1
                shoe.set_aside[card] += 1
            elif x.reason in ("foreign_card", "no_shoe") or x.counted is False:
                if x.reason == "foreign_card":
                    shoe.foreign.append(card)
            else:
                shoe.taken += 1
                shoe.set_aside[card] += 1
                index = shoe.taken
            if x.carry:
                carried.setdefault(table, []).append((card, index))
        elif isinstance(x, ev.IncidentRaised):
            details = ev.given(x.details, None) or {}
            if shoe is not None and x.kind in ("possible_duplicate", "duplicate_card"):
                shoe.duplicates.append(details.get("card"))
            if shoe is not None and x.kind == "unreadable_card":
                shoe.unreadable += 1
        if isinstance(x, ev.BettingOpened):
            rounds[x.round_id] = {
                "table_id": table,
                "round_id": x.round_id,
                "game_number": x.game_number,
                "shoe_no": shoe.shoe_no if shoe else None,
                "dealers": [],
                "supervisors": [],
                "cards": [],
                "rules_sha256": config_hash.get(table),
                "incidents": [],
            }
        round_id = event.round_id or (p.get("round_id") if isinstance(p, dict) else None)
        record = rounds.get(round_id) if round_id else None
        if record is None:
            continue
        person(record, event.actor)
        if isinstance(x, ev.CardDealt):
            source = "carried" if x.source == "carried" else card_source(event.actor)
            index = None
            if source == "carried":
                waiting = carried.get(table, [])
                for position, (card, at) in enumerate(waiting):
                    if card == x.card:
                        index = at
                        del waiting[position]
                        break
                if shoe is not None:
                    shoe.set_aside[x.card] -= 1
                    shoe.dealt[x.card] += 1
            elif shoe is not None:
                shoe.taken += 1
                shoe.dealt[x.card] += 1
                index = shoe.taken
            record["cards"].append(
                {"card": x.card, "shoe_index": index, "source": source, "by": event.actor}
            )
        elif isinstance(x, ev.CardsRearranged) and x.read_twice:
            # one card the reader sent twice: the repeat leaves the round and the shoe's
            # count, and the cards read after it take back their places in the shoe
            twice = ev.required(x.read_twice)
            cards = record["cards"]
            at = twice["index"]
            if 0 <= at < len(cards) and cards[at]["card"] == twice["card"]:
                gone = cards.pop(at)["shoe_index"]
                if shoe is not None:
                    shoe.dealt[twice["card"]] -= 1
                    if gone is not None:
                        shoe.taken -= 1
                        for later in cards[at:]:
                            if later["shoe_index"] is not None and later["shoe_index"] > gone:
                                later["shoe_index"] -= 1
        elif isinstance(x, ev.CardsRearranged):
            entered = list(ev.given(x.entered, ()) or ())
            by_card = {c["card"]: c for c in record["cards"]}
            cards = []
            for code in x.cards:
                if code in entered:
                    entered.remove(code)
                    if shoe is not None:
                        shoe.taken += 1
                        shoe.dealt[code] += 1
                    cards.append(
                        {
                            "card": code,
                            "shoe_index": shoe.taken if shoe else None,
                            "source": "manual",
                        }
                    )
                else:
                    cards.append(
                        by_card.get(code, {"card": code, "shoe_index": None, "source": "reader"})
                    )
            record["cards"] = cards
        elif isinstance(x, ev.IncidentRaised):
            record["incidents"].append(x.kind)
    return Records(rounds, [s.to_json() for s in shoes])
