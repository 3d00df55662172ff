"""The typed event catalogue (issue 30): one class per stored type, every field with its
audience, the fold refusing what it does not know, and a log written before the typed
events loading, replaying and verifying unchanged."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import abc, defaultdict
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from audit.canonical import canonical_json
from audit.export import read_export, verify_export
from table_service.regulator.replay import ReplayTotals, fold_rounds, replay_round
from table_service.table import events as ev
from table_service.table import state as st
from table_service.table.audience import OWNED, PUBLIC, STAFF
from table_service.table.view import EVENTS, READ_MODELS, Behind, Cards, Each, Owned

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "event_log_d461409.jsonl"
# The fixture folded by the table's fold and the regulator's replay on the main before the
# typed fold (2e88f2f, handlers over payload dicts): every table's summary, every round's
# state after each of its events, and every round as the regulator folds it.
FIXTURE_STATE = ROOT / "tests" / "fixtures" / "event_log_d461409.state.json"
STATIC = ROOT / "table_service" / "consoles" / "static"


def test_every_event_type_has_one_class_and_every_field_an_audience() -> None:
    assert len({cls.TYPE for cls in ev.CLASSES}) == len(ev.CLASSES) == len(ev.REGISTRY)
    for cls in ev.CLASSES:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]  # dataclasses' own, untyped
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


def _fixture_rows() -> list[Any]:
    _, rows, _ = read_export(FIXTURE)
    return list(rows)


def _stored(row: Any) -> dict[str, Any]:
    payload: dict[str, Any] = (
        json.loads(row.payload) if isinstance(row.payload, str) else row.payload
    )
    return payload


def test_the_old_log_replays_to_the_very_state_the_dict_fold_gave() -> None:
    """Every table's summary, every round after each of its events (cards, bets, phase,
    outcome, settle input, early settlements, revealed cards), and the regulator's fold of
    every round: what the fold over payload dicts made of this log, to the byte."""
    rows = _fixture_rows()
    per_table: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        per_table[row.table_id].append((row.type, _stored(row), row.seq))
    out: dict[str, Any] = {"tables": {}, "rounds": {}}
    for table_id, events in sorted(per_table.items()):
        state = st.TableState(table_id)
        for event in events:
            state = st.fold(state, [event])
            rnd = state.round
            if rnd is not None:
                out["rounds"][rnd.round_id] = {
                    "phase": rnd.phase,
                    "cards": list(rnd.cards),
                    "bets": sorted(rnd.bets),
                    "settle_input": st.settle_input_of(rnd),
                    "outcome": dict(rnd.outcome) if rnd.outcome else None,
                    "early": {k: list(v) for k, v in rnd.early.items()},
                    "revealed": list(rnd.revealed),
                }
        assert st.fold(st.TableState(table_id), events) == state  # chunks merged: the same
        out["tables"][table_id] = state.public_summary()
    folded = fold_rounds(rows)
    out["replay"] = {
        rid: {
            "cards": f.cards,
            "status": f.status,
            "bets": {b: r.to_json() for b, r in f.bets.items()},
            "settle_input": f.settle_input(),
        }
        for rid, f in sorted(folded.rounds.items())
    }
    got = json.loads(json.dumps(out, sort_keys=True, default=str))
    assert got == json.loads(FIXTURE_STATE.read_text(encoding="utf-8"))


# -- the codec: every registered class, any payload its fields allow -----------------------
_JSON = st_.recursive(
    st_.none() | st_.booleans() | st_.integers(-(2**53) + 1, 2**53 - 1) | st_.text(max_size=8),
    lambda inner: (
        st_.lists(inner, max_size=3) | st_.dictionaries(st_.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_NAMES = st_.text(st_.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)


def _value(hint: Any) -> st_.SearchStrategy[Any]:
    """Values of a field's declared type (each member of a union), as JSON carries them."""
    if get_origin(hint) in (Union, UnionType):
        return st_.one_of([_value(h) for h in get_args(hint) if h is not ev.Absent])
    origin = get_origin(hint)
    if hint is type(None):
        return st_.none()
    if hint is bool:
        return st_.booleans()
    if hint is int:
        return st_.integers(-(2**53) + 1, 2**53 - 1)
    if hint is str:
        return st_.text(max_size=12)
    if origin in (list, tuple, abc.Sequence):
        (item,) = get_args(hint)
        return st_.lists(_value(item), max_size=4)
    if origin in (dict, abc.Mapping):
        return st_.dictionaries(_NAMES, _JSON, max_size=4)
    assert hint is object, hint  # a field that may hold any JSON value
    return _JSON


@st_.composite
def _payloads(draw: Any, cls: type[ev.TableEvent]) -> dict[str, Any]:
    payload = {}
    for f in dataclasses.fields(cls):
        optional = f.default is ev.ABSENT
        if optional and not draw(st_.booleans()):
            continue  # absent from the stored payload (not the same as a recorded null)
        hint = eval(str(f.type), vars(ev))  # the field's declared type (a string: annotations)
        payload[f.name] = draw(_value(hint))
    return payload


@st_.composite
def _any_event(draw: Any) -> tuple[type[ev.TableEvent], dict[str, Any]]:
    cls = draw(st_.sampled_from(ev.CLASSES))
    return cls, draw(_payloads(cls))


@settings(max_examples=300, deadline=None)
@given(_any_event())
def test_every_registered_class_round_trips_its_stored_payload(
    case: tuple[type[ev.TableEvent], dict[str, Any]],
) -> None:
    cls, payload = case
    stored = canonical_json(payload)
    event = ev.parse(cls.TYPE, json.loads(stored))  # read back as the log holds it
    assert type(event) is cls
    assert canonical_json(event.to_payload()) == stored  # the same bytes, so the same hash
    assert ev.encode(event) == event.to_payload()
    built = cls(**{k: v for k, v in json.loads(stored).items()})  # as decide builds it
    assert built == event
    assert ev.decode(cls, event.to_payload()) == event


@pytest.mark.parametrize("cls", ev.CLASSES, ids=lambda c: c.TYPE)
def test_every_class_refuses_an_undeclared_field_read_or_built(cls: type[ev.TableEvent]) -> None:
    required = {f.name: None for f in dataclasses.fields(cls) if f.default is not ev.ABSENT}
    assert ev.parse(cls.TYPE, required).to_payload() == required
    with pytest.raises(ev.EventError, match="unknown field"):
        ev.parse(cls.TYPE, {**required, "undeclared": 1})
    with pytest.raises(TypeError):
        cls(**required, undeclared=1)  # type: ignore[call-arg]  # the wrong call is the test
    if required:  # a required field missing: refused too
        with pytest.raises(ev.EventError):
            ev.parse(cls.TYPE, dict(list(required.items())[1:]))


def test_decide_records_typed_events_only() -> None:
    from table_service.table.decide import Decision

    decision = Decision(st.TableState("t1"))
    with pytest.raises(TypeError, match="typed"):
        decision.emit("reader_status", {"online": True})  # type: ignore[arg-type]  # refused: the test
    decision.emit(ev.ReaderStatus(online=True))
    assert [(d.type, d.payload) for d in decision.drafts] == [("reader_status", {"online": True})]
    assert decision.state.reader_online
