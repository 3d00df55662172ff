"""The typed event catalogue (issue 30): one class per stored type, every field with its
audience, the fold refusing what it does not know, and a log written before the typed
events loading, replaying and verifying unchanged."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from audit.canonical import canonical_json
from audit.export import read_export, verify_export
from table_service.regulator.replay import ReplayTotals, fold_rounds, replay_round
from table_service.table import events as ev
from table_service.table import state as st
from table_service.table.audience import OWNED, PUBLIC, STAFF
from table_service.table.view import EVENTS, READ_MODELS, Behind, Cards, Each, Owned

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "event_log_d461409.jsonl"
STATIC = ROOT / "table_service" / "consoles" / "static"


def test_every_event_type_has_one_class_and_every_field_an_audience() -> None:
    assert len({cls.TYPE for cls in ev.CLASSES}) == len(ev.CLASSES) == len(ev.REGISTRY)
    for cls in ev.CLASSES:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert dataclasses.is_dataclass(cls) and params.frozen, cls
        fields = ev.audiences(cls)  # a field without an audience: KeyError
        assert fields, cls
        # events are projected per class of viewer: public, each operator, the staff
        assert {a for a in fields.values()} <= {PUBLIC, OWNED, STAFF}, cls
        if cls.OWNED is not None:
            assert fields[cls.OWNED] is OWNED, cls
    assert set(EVENTS) == set(ev.REGISTRY)  # the projection reads the registry


def _walk(shape: Any, path: str) -> list[str]:
    """Every leaf of a read model's declaration: each an audience or a declared kind of
    value (cards that may be face down, a value that may name a bet-behind bet)."""
    if isinstance(shape, frozenset):
        assert shape, path
        return [path]
    if shape in (Cards, Behind):
        return [path]
    if isinstance(shape, Each | Owned):
        return _walk(shape.shape, path + "[]")
    assert isinstance(shape, dict), (path, shape)
    return [leaf for k, v in shape.items() for leaf in _walk(v, f"{path}.{k}")]


def test_every_read_model_declares_every_field() -> None:
    leaves = {kind: _walk(shape, kind) for kind, shape in READ_MODELS.items()}
    assert "table.round.cards" in leaves["table"]
    assert "round_detail.settle_input.seats[].stake" in leaves["round_detail"]


def test_every_registered_type_changes_the_state_or_is_declared_to_change_nothing() -> None:
    handled = set(st._HANDLERS)
    assert handled | st.NO_STATE == set(ev.CLASSES)
    assert not handled & st.NO_STATE


def test_the_fold_refuses_an_unknown_type_or_field_and_keeps_the_state() -> None:
    state = st.TableState("t1")
    with pytest.raises(ev.UnknownEvent):
        st.apply(state, "card_delt", {"round_id": "r", "card": "AS"})
    with pytest.raises(ev.EventError, match="unknown field"):
        st.apply(state, "reader_status", {"online": True, "onlien": False})
    with pytest.raises(ev.EventError, match="online"):
        st.apply(state, "reader_status", {"detail": "no online flag"})
    assert st.apply(state, "reader_status", {"online": True}).reader_online


def test_a_payload_round_trips_with_absent_and_null_fields_kept_apart() -> None:
    payload = {"round_id": "r", "card": "AS", "index": 0, "position": None, "reader_seq": None}
    event = ev.parse("card_dealt", payload)
    assert isinstance(event, ev.CardDealt) and event.seat is ev.ABSENT and event.position is None
    assert event.to_payload() == payload
    again = ev.CardDealt(round_id="r", card="AS", index=0, position=None, reader_seq=None)
    assert canonical_json(again.to_payload()) == canonical_json(payload)


def test_an_older_version_is_upcast_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ev.CutCardDrawn, "VERSION", 2)
    monkeypatch.setitem(ev.UPCASTERS, ("cut_card_drawn", 1), lambda p: {"shoe_no": p["shoe"]})
    assert ev.CutCardDrawn.from_payload({"shoe": 3}, version=1).shoe_no == 3
    with pytest.raises(ev.EventError, match="newer"):
        ev.CutCardDrawn.from_payload({"shoe_no": 3}, version=3)


def test_every_event_type_the_consoles_name_is_registered() -> None:
    names: set[str] = set()
    for script in STATIC.glob("*.js"):
        text = script.read_text(encoding="utf-8")
        # an event's or a recall step's type (a bet's type, b.type, is a bet type)
        names |= set(re.findall(r"\b(?:e|event|step)\.type\s*[!=]==?\s*\"([a-z_]+)\"", text))
        names |= set(re.findall(r"\"step\.([a-z_]+)\"", text))  # the recall's step names
        if script.name == "recall.js":
            names |= set(re.findall(r"case \"([a-z_]+)\"", text))  # its switch on the type
    assert len(names) > 20
    assert names <= set(ev.REGISTRY), names - set(ev.REGISTRY)


def test_a_log_written_before_the_typed_events_loads_replays_and_verifies() -> None:
    header = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])
    assert verify_export(FIXTURE, header["public_key"]).ok  # the chain and its checkpoint
    _, rows, _ = read_export(FIXTURE)
    per_table: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        payload = json.loads(row.payload) if isinstance(row.payload, str) else row.payload
        event = ev.parse(row.type, payload)  # every stored type and field is known
        assert canonical_json(event.to_payload()) == canonical_json(payload)  # same bytes
        per_table[row.table_id].append((row.type, payload, row.seq))
    assert len(per_table) == 4
    for table_id, events in per_table.items():
        state = st.fold(st.TableState(table_id), events)  # the live table's own fold
        assert state.last_seq == events[-1][2]
    folded = fold_rounds(rows)  # the regulator's replay settles every round again
    totals = ReplayTotals()
    for fold in folded.rounds.values():
        replay_round(fold, folded.rules[fold.rules_ref], None, totals)
    assert len(folded.rounds) == 12 and totals.bets > 0
