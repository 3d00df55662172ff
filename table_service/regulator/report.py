"""``livetable report``: rounds, voids, incidents, stakes, returns and hold, by table,
dealer or day, with each bet type's actual return next to its theoretical RTP from the
rules code. Everything is folded from the log, as in a regulator's replay.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from table_service.regulator.records import fold_records
from table_service.regulator.replay import fold_rounds, rules_hash

_RTP_CACHE: dict[str, dict[str, float]] = {}


@dataclass
class BetLine:
    bets: int = 0
    staked: int = 0
    returned: int = 0
    theoretical: float | None = None

    @property
    def actual(self) -> float | None:
        return self.returned / self.staked if self.staked else None


@dataclass
class Group:
    key: str
    rounds: int = 0
    voided: int = 0
    incidents: Counter[str] = field(default_factory=Counter)
    staked: int = 0
    returned: int = 0
    refunded: int = 0
    commission: int = 0  # kept by the house out of wins (in neither staked nor returned)
    by_bet: dict[str, BetLine] = field(default_factory=lambda: defaultdict(BetLine))
    shoes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hold(self) -> float | None:
        return (self.staked - self.returned) / self.staked if self.staked else None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "rounds": self.rounds,
            "voided": self.voided,
            "incidents": dict(sorted(self.incidents.items())),
            "staked": self.staked,
            "returned": self.returned,
            "refunded": self.refunded,
            "commission": self.commission,
            "shoes": self.shoes,
            "hold": self.hold,
            "bets": {
                bet: {
                    "bets": line.bets,
                    "staked": line.staked,
                    "returned": line.returned,
                    "actual_return": line.actual,
                    "theoretical_rtp": line.theoretical,
                }
                for bet, line in sorted(self.by_bet.items())
            },
        }


def _theoretical(game: str, config: Mapping[str, Any]) -> dict[str, float]:
    key = f"{game}:{rules_hash(config)}"
    found = _RTP_CACHE.get(key)
    if found is None:
        # the game's own RTP code, under the rules the table recorded, parsed as the live
        # table parses them (the replay's way)
        from table_service.table.config import config_from_snapshot

        table = config_from_snapshot(dict(config))
        found = table.game_impl.theoretical_rtp(table.rules) if table.game == game else {}
        _RTP_CACHE[key] = found
    return found


def build_report(
    events: Iterable[Any],
    *,
    date_from: str | None = None,
    date_to: str | None = None,
    by: str = "table",
) -> list[Group]:
    """Groups of closed rounds opened within [date_from, date_to] (inclusive, UTC)."""
    if by not in ("table", "dealer", "day"):
        raise ValueError("--by is table, dealer or day")
    rows = list(events)
    folded = fold_rounds(rows)
    folded_records = fold_records(rows)
    records = folded_records.rounds
    groups: dict[str, Group] = {}
    for fold in sorted(folded.rounds.values(), key=lambda f: f.first_seq):
        day = fold.started[:10]
        if (date_from and fold.started < date_from) or (
            date_to and fold.started[: len(date_to)] > date_to
        ):
            continue
        if fold.status == "open":
            continue
        record = records.get(fold.round_id, {})
        if by == "table":
            key = fold.table_id
        elif by == "day":
            key = day
        else:
            dealers = record.get("dealers") or ["(no dealer)"]
            key = dealers[0]
        group = groups.setdefault(key, Group(key))
        group.rounds += 1
        group.voided += fold.status == "voided"
        group.incidents.update(record.get("incidents", []))
        config = folded.rules[fold.rules_ref]
        rtp = _theoretical(fold.game, config)
        for bet in fold.bets.values():
            if bet.status == "refunded":  # a refund is neither a win nor a loss
                group.refunded += bet.stake
                continue
            line = group.by_bet[bet.type]
            line.bets += 1
            line.staked += bet.stake
            line.returned += bet.returned or 0
            line.theoretical = rtp.get(bet.type)
            group.staked += bet.stake
            group.returned += bet.returned or 0
            group.commission += bet.commission
    # Incidents outside any round (a card between rounds, a reader fault) count too.
    for event in rows:
        if event.type != "incident_raised" or event.round_id is not None:
            continue
        if (date_from and event.ts < date_from) or (date_to and event.ts[: len(date_to)] > date_to):
            continue
        group_key = {"table": event.table_id, "day": event.ts[:10]}.get(by)
        if group_key is not None:
            payload = event.payload if isinstance(event.payload, dict) else {}
            groups.setdefault(group_key, Group(group_key)).incidents[str(payload.get("kind"))] += 1
    if by == "table":  # each ended shoe's reconciliation, with its table
        for shoe in folded_records.shoes:
            if shoe["ended"] and shoe["table_id"] in groups:
                groups[shoe["table_id"]].shoes.append(shoe)
    return [groups[k] for k in sorted(groups)]
