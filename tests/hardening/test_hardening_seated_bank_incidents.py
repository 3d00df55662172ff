"""An incident's details name no seated banker's face-down card to the dealer (issue 30,
hardening).

At a seated-bank Xì Dách table the dealer never sees the banker's face-down card before it
is turned (rules/xidach.md: "seen only by the banker"); the dealt card's own events and the
summary hide it. But the reader's incidents name cards too: the shoe re-sending the card
before it after a reconnection (``possible_duplicate``: that card may be the banker's hole
card), the shoe and the camera disagreeing on the card owed, a missed card entered or a
card read twice taken out (``cards_rearranged``). On the code before, the dealer read the
hole card in those details on its stream, ``GET /tables/{t}``, ``GET /incidents`` and the
dealer console. Now the projection names no card in them to a dealer at a round a seated
player banks; the supervisor, who resolves the incident, and the regulator still do.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from audit.store import StoredEvent
from table_service.app import build_app
from table_service.table import commands as c
from table_service.table.audience import Audience
from table_service.table.service import TableManager
from table_service.table.view import DEALER_VIEWER, STAFF_VIEWER, Viewer, view
from tests.table.test_table_api import Clock
from tests.xidach.test_xidach_api import ROOM, Client, _tokens, open_seated_bank_round

HOLE = "6C"


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_the_dealer_reads_no_seated_bankers_hole_card_in_an_incidents_details(
    make_runtime: Any,
) -> None:
    t, runtime = ROOM.table_id, make_runtime()
    manager = TableManager(runtime, [ROOM], clock=Clock())
    with TestClient(build_app(runtime, [ROOM], manager=manager, with_readers=False)) as client:
        xd = Client(client, _tokens(runtime))
        open_seated_bank_round(xd, t)
        token = xd.tokens["dealer"]
        with client.websocket_connect(f"/api/v1/tables/{t}/stream?token={token}") as ws:
            for card in ("TS", HOLE):  # seat 1's first card; the banker's, face down
                xd.post(f"/tables/{t}/cards", "supervisor", {"card": card})
            # the shoe reconnects and says the card before came again (the reader's event)
            text = f"{HOLE} came again right after the shoe reconnected: a re-send or a copy"
            fault = c.ReaderFault("possible_duplicate", {"card": HOLE, "text": text})
            execute = manager.tables[t].execute
            assert client.portal is not None  # inside the client's context: its loop runs
            client.portal.call(functools.partial(execute, fault, actor=f"reader:{t}"))
            frames: list[dict[str, Any]] = []
            while not any(f["type"] == "incident_raised" for f in frames):
                frames.append(ws.receive_json())
        dealer = {
            "stream": frames,
            "table": xd.get(f"/tables/{t}", "dealer"),
            "incidents": xd.get(f"/incidents?table_id={t}", "dealer"),
            "console": xd.get(f"/console/tables/{t}/view", "dealer"),
        }
        assert [k for k, v in dealer.items() if f'"{HOLE}"' in json.dumps(v)] == []
        (incident,) = [i for i in dealer["incidents"] if i["kind"] == "possible_duplicate"]
        assert incident["details"]["card"] is None and incident["details"]["text"] is None
        assert incident["details"]["index"] == 2  # what the dealer needs: where, not which
        # the supervisor, who resolves it, reads the card
        (seen,) = [
            i
            for i in xd.get(f"/incidents?table_id={t}", "supervisor")
            if i["kind"] == "possible_duplicate"
        ]
        assert seen["details"]["card"] == HOLE
        summary = xd.get(f"/tables/{t}", "supervisor")
        assert HOLE in json.dumps(summary["incidents"])


def _event(kind: str, payload: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        seq=9, table_id="xds-1", round_id="xds-1-s1-g1", type=kind, actor="system",
        ts="2026-12-05T00:00:00Z", payload=payload, prev_hash="", hash="",
    )  # fmt: skip


def test_a_rearrangement_names_no_entered_or_read_twice_card_to_the_dealer_at_a_seated_bank() -> (
    None
):
    """A missed card entered where the banker's face-down card goes, a card read twice
    taken out: the dealer's stream names neither at a round a seated player banks; at a
    house-banked round (the dealer plays the house's hand) and for the pit it does."""
    entered = _event(
        "cards_rearranged",
        {
            "round_id": "xds-1-s1-g1",
            "cards": ["TS", HOLE, "KD"],
            "entered": [HOLE],
            "incident_id": "xds-1-i1",
            "face_down": [1],
            "read_twice": {"card": HOLE, "index": 3},
        },
    )
    raised = _event(
        "incident_raised",
        {
            "incident_id": "xds-1-i1",
            "kind": "reader_disagreement",
            "blocking": True,
            "round_id": "xds-1-s1-g1",
            "details": {"serial": HOLE, "camera": "6S", "text": f"shoe read {HOLE}", "index": 1},
        },
    )
    seated = Viewer(Audience.DEALER, holds=lambda _round, seat: seat is None)
    for event in (entered, raised):
        text = json.dumps(view(event, seated))
        assert f'"{HOLE}' not in text, text
        assert HOLE in json.dumps(view(event, STAFF_VIEWER))
        assert HOLE in json.dumps(view(event, DEALER_VIEWER))  # the house banks: no mask
    shown = view(raised, seated)
    assert shown is not None and shown["payload"]["details"]["index"] == 1
