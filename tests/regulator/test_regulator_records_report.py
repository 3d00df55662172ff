"""Per-round records, shoe reconciliations and the report, all folded from the log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import text

from audit.store import EventStore
from table_service.regulator.bundle import BundleError, _write_manifest, verify_bundle, write_bundle
from table_service.regulator.records import fold_records
from table_service.regulator.report import build_report
from table_service.runtime import Runtime
from tests.support.table_session import Session


@pytest.fixture
def bundle(make_runtime: Callable[..., Runtime], tmp_path: Path) -> tuple[Runtime, Path]:
    runtime = make_runtime(checkpoint_every=10_000)
    Session(runtime).play(10, bets=4, void=(3,))
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with runtime.sessions() as session:
        write_bundle(session, runtime.signer.public_key, runtime.store.origin, tmp_path / "b")
    return runtime, tmp_path / "b"


def test_each_round_names_its_people_shoe_cards_and_rules(bundle: tuple[Runtime, Path]) -> None:
    _, path = bundle
    lines = [json.loads(x) for x in (path / "rounds.jsonl").read_text().splitlines()]
    indexes: list[int] = []
    for line in lines:
        record = line["record"]
        assert record["table_id"] == "t1" and record["shoe_no"] == 1
        assert record["dealers"] == ["dealer:d1"]
        assert record["rules_sha256"] == line["rules_sha256"]
        cards = [c["card"] for c in record["cards"]]
        if line["status"] == "settled":
            assert cards == line["settle_input"]["cards"]
        # the session scans as the dealer's console: typed in, not read by the shoe
        assert all(c["source"] in ("manual", "carried") for c in record["cards"])
        assert all(c["by"] == "dealer:d1" for c in record["cards"])
        indexes += [c["shoe_index"] for c in record["cards"] if c["source"] != "carried"]
    assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)
    voided = next(x for x in lines if x["status"] == "voided")
    assert voided["record"]["supervisors"] == ["supervisor:s1"]


def test_the_shoe_reconciles_against_its_composition(bundle: tuple[Runtime, Path]) -> None:
    _, path = bundle
    (shoe,) = [json.loads(x) for x in (path / "shoes.jsonl").read_text().splitlines()]
    assert shoe["decks"] == 8
    assert shoe["burnt"] + shoe["dealt"] + shoe["set_aside"] + shoe["remaining"] == 416
    assert shoe["burnt"] >= 2 and shoe["over_composition"] == [] and shoe["foreign"] == []
    lines = [json.loads(x) for x in (path / "rounds.jsonl").read_text().splitlines()]
    assert shoe["dealt"] == sum(len(x["record"]["cards"]) for x in lines)
    assert sum(v["remaining"] for v in shoe["by_card"].values()) == shoe["remaining"]


def test_card_sources() -> None:
    from table_service.regulator.records import card_source

    assert card_source("reader:bac-1-shoe") == "shoe"
    assert card_source("camera:cam-2") == "camera"
    assert card_source("reader:bac-1-camera") == "camera"
    assert card_source("dealer:alice") == "manual"


def test_a_shoe_with_foreign_duplicate_and_unreadable_cards() -> None:
    def ev(
        seq: int, kind: str, payload: dict[str, Any], round_id: str | None = None
    ) -> SimpleNamespace:
        return SimpleNamespace(
            seq=seq,
            table_id="t9",
            round_id=round_id,
            type=kind,
            actor="reader:r",
            ts="x",
            payload=payload,
        )

    events = [
        ev(1, "shoe_inserted", {"shoe_no": 3, "decks": 6}),
        ev(2, "card_burnt", {"card": "AS", "indicator": True}),
        ev(3, "card_burnt", {"card": None, "unreadable": True}),
        ev(4, "card_set_aside", {"card": "KH", "reason": "foreign_card", "counted": False}),
        ev(
            5,
            "incident_raised",
            {
                "incident_id": "t9-i1",  # a table event as it is stored (every required field)
                "kind": "possible_duplicate",
                "blocking": True,
                "details": {"card": "2C"},
            },
        ),
        ev(6, "shoe_ended", {"shoe_no": 3, "reason": "cut card"}),
    ]
    (shoe,) = fold_records(events).shoes
    assert (shoe["shoe_no"], shoe["decks"], shoe["ended"]) == (3, 6, "cut card")
    assert shoe["foreign"] == ["KH"] and shoe["duplicates"] == ["2C"] and shoe["unreadable"] == 1
    assert shoe["burnt"] == 1 and shoe["remaining"] == 6 * 52 - 1
    assert shoe["by_card"]["AS"]["burnt"] == 1


def test_records_and_shoes_in_the_bundle_must_match_the_events(
    bundle: tuple[Runtime, Path],
) -> None:
    _, path = bundle
    rounds = path / "rounds.jsonl"
    lines = rounds.read_text().splitlines()
    first = json.loads(lines[0])
    first["record"]["dealers"] = ["dealer:someone-else"]
    lines[0] = json.dumps(first)
    rounds.write_text("\n".join(lines) + "\n")
    _write_manifest(path)
    with pytest.raises(BundleError, match="record differs from the events"):
        verify_bundle(path, replay=True)


def test_the_report_by_table_day_and_dealer(bundle: tuple[Runtime, Path]) -> None:
    runtime, _ = bundle
    with runtime.sessions() as session:
        events = EventStore.read(session)
    (group,) = build_report(events, by="table")
    with runtime.engine.connect() as conn:
        staked, returned = conn.execute(
            text("SELECT SUM(stake), SUM(returned) FROM bets WHERE status = 'settled'")
        ).one()
        refunded = conn.execute(
            text("SELECT SUM(stake) FROM bets WHERE status = 'refunded'")
        ).scalar_one()
    staked, returned, refunded = int(staked), int(returned), int(refunded)  # PG: Decimal
    assert (group.key, group.rounds, group.voided) == ("t1", 10, 1)
    assert (group.staked, group.returned, group.refunded) == (staked, returned, refunded)
    assert group.hold == pytest.approx((staked - returned) / staked)
    assert group.incidents == {}
    between = SimpleNamespace(
        seq=10**6, table_id="t1", round_id=None, type="incident_raised", actor="reader:r",
        ts=events[-1].ts,
        payload={"incident_id": "t1-i99", "kind": "unneeded_card", "blocking": False},
    )  # fmt: skip
    (with_stray,) = build_report([*events, between], by="table")
    assert with_stray.incidents == {"unneeded_card": 1}
    player = group.by_bet.get("player") or group.by_bet["banker"]
    assert player.theoretical is not None and 0.98 < player.theoretical < 0.99
    assert sum(b.staked for b in group.by_bet.values()) == staked
    (by_dealer,) = build_report(events, by="dealer")
    assert by_dealer.key == "dealer:d1" and by_dealer.rounds == 10
    day = events[0].ts[:10]
    assert [g.key for g in build_report(events, by="day")] == [day]
    assert build_report(events, date_from="2999-01-01") == []
    with pytest.raises(ValueError):
        build_report(events, by="shoe")


def test_every_ended_shoe_gets_one_reconciliation_event(
    make_runtime: Callable[..., Runtime],
) -> None:
    from table_service.regulator.watchdog import AuditWatchdog
    from table_service.table import commands as c

    runtime = make_runtime(checkpoint_every=10_000)
    table = Session(runtime)
    table.play(4, bets=6, void=(2,))  # the bets' payloads are not read for the shoe's fold
    dog = AuditWatchdog(runtime, seal_seconds=1, read_model_seconds=0)
    assert dog.reconcile_shoes() == 0  # the shoe is still in use
    table.run(c.ChangeShoe("end of test shoe"), "supervisor:s1")
    assert dog.reconcile_shoes() == 1
    assert dog.reconcile_shoes() == 0  # once only
    assert AuditWatchdog(runtime, seal_seconds=1, read_model_seconds=0).reconcile_shoes() == 0
    with runtime.sessions() as session:
        events = [e for e in EventStore.read(session) if e.type == "shoe_reconciled"]
    (event,) = events
    shoe = event.payload
    assert (shoe["table_id"], shoe["shoe_no"], shoe["ended"]) == ("t1", 1, "end of test shoe")
    assert shoe["burnt"] + shoe["dealt"] + shoe["set_aside"] + shoe["remaining"] == 416
    with runtime.sessions() as session:
        groups = build_report(EventStore.read(session), by="table")
    assert groups[0].shoes == [shoe]
