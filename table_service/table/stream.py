"""The studio stream: each table's events in log order, live, with resume.

Events reach the hub only after their commit (the event store's subscriber hook). A
client names the last sequence number it has; it gets everything after it from the log,
then the live feed, with no gap and no duplicate because it subscribes before replaying
and drops anything at or below what it already sent.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import structlog

from audit.store import StoredEvent

log = structlog.get_logger(__name__)

QUEUE_LIMIT = 10_000

# What the public (players' clients, on-screen graphics) may see of each event type.
PUBLIC_FIELDS: dict[str, tuple[str, ...]] = {
    "table_opened": (),
    "shoe_inserted": ("shoe_no", "decks"),
    "betting_opened": ("round_id", "game_number", "closes_at"),
    "betting_closed": ("round_id",),
    "card_dealt": ("round_id", "card", "position", "index", "seat", "hand"),
    "cards_rearranged": ("round_id", "cards"),
    "cards_revealed": ("round_id", "cards"),  # face-down cards turned (Xì Dách)
    "round_result": ("round_id", "outcome"),
    "round_settled": ("round_id",),
    "round_voided": ("round_id", "reason"),
    "cut_card_drawn": ("shoe_no",),
    "shoe_ended": ("shoe_no", "reason"),
    "incident_raised": ("kind", "blocking"),
    "incident_resolved": (),
    # seat games: whose turn, until when, and what was decided (seats, never accounts)
    "decision_awaited": ("round_id", "clock", "actors", "ms", "deadline"),
    "action_taken": ("round_id", "actor", "action", "hand", "auto"),
    "seat_taken": ("seat", "pending"),
    "seat_released": ("seat",),
    "player_disconnected": ("seat",),
}


def public_view(event: StoredEvent) -> dict[str, Any] | None:
    """The public form of an event, or None if the public sees nothing of it.

    Left out: accounts, stakes and payouts, actors, reader details, hashes, incident
    details; burn cards face down (only the shown indicator card is public).
    """
    if event.type == "card_burnt":
        if not event.payload.get("indicator"):
            return None
        data = {"card": event.payload.get("card")}
    elif event.type in PUBLIC_FIELDS:
        data = {k: event.payload.get(k) for k in PUBLIC_FIELDS[event.type]}
        if event.type == "card_dealt" and event.payload.get("face_up") is False:
            data["card"] = None  # dealt face down: the public sees it when it is turned
        if event.type == "cards_rearranged" and event.payload.get("face_down"):
            down = set(event.payload["face_down"])
            data["cards"] = [None if i in down else c for i, c in enumerate(data["cards"])]
        if event.type == "action_taken" and str(data.get("actor", "")).startswith("behind:"):
            data["actor"] = "behind"  # a bet-behind answer: the bet id stays private
        if event.type == "decision_awaited":
            data["actors"] = [
                "behind" if str(a).startswith("behind:") else a for a in data["actors"] or ()
            ]
    else:
        return None
    return {
        "seq": event.seq,
        "table_id": event.table_id,
        "round_id": event.round_id,
        "type": event.type,
        "ts": event.ts,
        "data": data,
    }


def internal_view(event: StoredEvent) -> dict[str, Any]:
    return event.to_json()


class StreamHub:
    """Fans committed events out to subscriber queues on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._subscribers: dict[str, set[asyncio.Queue[StoredEvent | None]]] = defaultdict(set)

    def publish(self, events: list[StoredEvent]) -> None:
        """Called from the committing thread; hands over to the loop in commit order."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._dispatch, events)

    def _dispatch(self, events: list[StoredEvent]) -> None:
        for event in events:
            for queue in list(self._subscribers.get(event.table_id, ())):
                if queue.qsize() >= QUEUE_LIMIT:
                    # A consumer this far behind is cut off; it resumes from its last seq.
                    self._subscribers[event.table_id].discard(queue)
                    queue.put_nowait(None)
                    log.warning("stream.subscriber_dropped", table_id=event.table_id)
                    continue
                queue.put_nowait(event)

    def subscribe(self, table_id: str) -> asyncio.Queue[StoredEvent | None]:
        queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue()
        self._subscribers[table_id].add(queue)
        return queue

    def end(self, table_id: str) -> None:
        """The table stopped running in this process (handed over): its subscribers are
        closed so they resume from their last seq wherever the table runs now."""
        for queue in self._subscribers.pop(table_id, set()):
            queue.put_nowait(None)

    def unsubscribe(self, table_id: str, queue: asyncio.Queue[StoredEvent | None]) -> None:
        self._subscribers[table_id].discard(queue)
