"""The camera at a live table: alone, and cross-checking the serial shoe.

A virtual shoe on a pseudo-terminal deals; each card it deals also slides past
a synthetic camera (the published ``plastic`` deck, rendered and degraded),
whose frames go through the real recognizer and voting. The table runs behind
its HTTP API on SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hardware_sim.camera.live import SyntheticCamera
from hardware_sim.camera.video import ROI
from hardware_sim.virtual_shoe import VirtualShoe
from table_service.app import build_app
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import CameraConfig, ShoeConfig, TableConfig
from tests.support.shoe_dealing import deal_unlocked

DECK = "plastic"
ROI_TEXT = ",".join(str(v) for v in ROI)


def wait_for(predicate: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_the_demo_plays_rounds_with_both_readers_and_real_recognition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deck_file: Path
) -> None:
    """``livetable demo --reader both``: the shoe and a camera over it, every card cross-checked
    (the camera alone at a table: test_a_table_runs_on_the_camera_alone).

    First in this module: a serial reader another test leaves reconnecting to a freed
    pseudo-terminal number can take the demo shoe's port when the number is reused.

    Its data folder holds the deck's calibration from an earlier run, as a studio keeps
    it: the one this module's tables read (the same deck, photographs and seed as the
    demo's own, 5 s of CPU not spent again). The demo's making of it is
    tests/xidach/test_xidach_demo.py's, whose first camera run calibrates its deck."""
    reader = "both"
    import io

    from rich.console import Console

    from table_service.demo.run import DemoOptions, run_demo

    for name in ("LIVETABLE_DATABASE_URL", "LIVETABLE_DATA_DIR", "LIVETABLE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    kept = tmp_path / "data" / "camera" / "plastic.npz"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(deck_file.read_bytes())
    out = io.StringIO()
    options = DemoOptions(
        port=0,
        data_dir=tmp_path / "data",
        rounds=2,
        seed=5,
        betting_seconds=1.0,
        mistakes=0.0,
        players=2,
        cut_after=40,
        pause=0.1,
        reader=reader,
    )
    report = await run_demo(options, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert report.rounds_played == 2, text[-3000:]
    assert ("cross-checked by a camera" if reader == "both" else "read by a camera") in text
    assert "readers disagree" not in text  # every card seen alike by the shoe and the camera
    # the kept calibration read as it was, the deck not photographed again
    assert kept.read_bytes() == deck_file.read_bytes()
    assert not (tmp_path / "data" / "camera" / DECK).exists()


@pytest.fixture(scope="module")
def deck_file(published_calibration_file: Callable[[str], Path]) -> Path:
    """The plastic deck calibrated from its photographs (seed 5, grey; made once a session:
    test_camera_published reads the same deck)."""
    return published_calibration_file(DECK)


def _rig(make_runtime: Callable[..., Runtime], config: TableConfig) -> Iterator[dict[str, Any]]:
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor", "operator"):
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
    app = build_app(runtime, [config], reader_options={"offline_timeout": 3.0})
    with TestClient(app) as client:
        headers = {r: {"Authorization": f"Bearer {t}"} for r, t in tokens.items()}

        def post(path: str, role: str, body: Any = None) -> dict[str, Any]:
            response = client.post(f"/api/v1{path}", json=body, headers=headers[role])
            assert response.status_code == 200, response.text
            answer: dict[str, Any] = response.json()
            return answer

        def table() -> dict[str, Any]:
            url = f"/api/v1/tables/{config.table_id}"
            answer: dict[str, Any] = client.get(url, headers=headers["dealer"]).json()
            return answer

        yield {"post": post, "table": table}


def _deal_round(table: Callable[[], dict[str, Any]], deal: Callable[[], object]) -> dict[str, Any]:
    while table()["round"]["next_position"] is not None:
        before = len(table()["round"]["cards"])
        deal()

        def moved(before: int = before) -> bool:
            state = table()
            return bool(
                len(state["round"]["cards"]) > before
                or state["round"]["phase"] != "dealing"
                or state["incidents"]
            )

        wait_for(moved)
        if table()["incidents"]:
            return table()
    settled: dict[str, Any] = wait_for(lambda: table()["round"]["phase"] == "settled" and table())
    return settled


@pytest.fixture
def alone(make_runtime: Callable[..., Runtime], deck_file: Path) -> Iterator[dict[str, Any]]:
    name = f"cam-{uuid.uuid4().hex[:8]}"
    camera = SyntheticCamera(DECK, name=name, seed=2)
    config = TableConfig(
        table_id="bac-cam",
        betting_seconds=30,
        camera=CameraConfig(source=f"sim:{name}", calibration=str(deck_file), roi=ROI_TEXT),
    )
    try:
        for rig in _rig(make_runtime, config):
            yield {**rig, "camera": camera}
    finally:
        camera.stop()


def test_a_table_runs_on_the_camera_alone(alone: dict[str, Any]) -> None:
    post, table, camera = alone["post"], alone["table"], alone["camera"]
    cards = iter(["2S", "3H", "4H", "2S", "5H", "KD", "TC", "3S", "9S", "2H"])
    wait_for(lambda: table()["reader_online"])
    post("/tables/bac-cam/shoe", "supervisor")
    for _ in range(3):
        camera.card_dealt(next(cards))
    wait_for(lambda: table()["shoe"]["ready"])
    post("/tables/bac-cam/betting/open", "dealer")
    post("/tables/bac-cam/betting/close", "dealer")
    state = _deal_round(table, lambda: camera.card_dealt(next(cards)))
    assert state["incidents"] == []
    assert state["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]
    assert state["round"]["outcome"]["winner"] == "tie"


@pytest.fixture
def both(make_runtime: Callable[..., Runtime], deck_file: Path) -> Iterator[dict[str, Any]]:
    name = f"cam-{uuid.uuid4().hex[:8]}"
    camera = SyntheticCamera(DECK, name=name, seed=4)
    shoe = VirtualShoe("framed", seed=7, heartbeat=0.2, retransmit_interval=0.1)
    shoe.observers.append(camera.card_dealt)
    shoe.load(["2S", "3H", "4H", "2S", "5H", "KD", "TC", "3S", "9S", "2H", "KD"] + ["KH"] * 20)
    shoe.start()
    # The cross-check window. A card the camera missed is a disagreement only once the
    # camera has looked past the shoe's report by the window: the test's missed KD waits
    # it out. A card's frames are stamped from its deal (SyntheticCamera.grabbed_at) and
    # the verdict waits on how far the camera has read, so a loaded machine's slow drawing
    # or recognition delays a verdict, never changes it; what the window must cover is
    # the serial line's latency (the product's default: 3 s). It was 20 s when frames were
    # stamped as drawn: 15 s of each run spent waiting for the missed card.
    config = TableConfig(
        table_id="bac-2r",
        betting_seconds=30,
        shoe=ShoeConfig(port=shoe.device_path),
        camera=CameraConfig(
            source=f"sim:{name}", calibration=str(deck_file), roi=ROI_TEXT, window_seconds=5
        ),
    )
    try:
        for rig in _rig(make_runtime, config):
            yield {**rig, "shoe": shoe, "camera": camera}
    finally:
        shoe.stop()
        camera.stop()


def test_both_readers_agree_then_a_disagreement_stops_the_round(both: dict[str, Any]) -> None:
    post, table, shoe, camera = both["post"], both["table"], both["shoe"], both["camera"]
    wait_for(lambda: table()["reader_online"])
    post("/tables/bac-2r/shoe", "supervisor")
    for _ in range(3):
        shoe.deal()
    wait_for(lambda: table()["shoe"]["ready"])
    post("/tables/bac-2r/betting/open", "dealer")
    post("/tables/bac-2r/betting/close", "dealer")
    state = _deal_round(table, lambda: deal_unlocked(shoe, wait_for))
    assert state["incidents"] == [], state["incidents"]
    assert state["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]

    post("/tables/bac-2r/betting/open", "dealer")
    post("/tables/bac-2r/betting/close", "dealer")
    deal_unlocked(shoe, wait_for)  # 9S, seen by both
    wait_for(lambda: table()["round"]["cards"] == ["9S"])
    camera.show_next_as("7C")  # the camera sees another card than the shoe reads
    shoe.deal()  # 2H
    incident = wait_for(lambda: table()["incidents"])[0]
    assert incident["kind"] == "reader_disagreement"
    assert incident["details"]["serial"] == "2H" and incident["details"]["camera"] == "7C"
    assert incident["details"]["index"] == 1
    assert table()["paused"] and table()["round"]["cards"] == ["9S"]  # on neither's word
    post(
        f"/tables/bac-2r/incidents/{incident['incident_id']}/resolve",
        "supervisor",
        {"note": "card checked on the table: 2H", "entered": [{"card": "2H", "index": 1}]},
    )
    camera.miss_next()  # the next card passes out of the camera's view
    shoe.deal()  # KD
    incident = wait_for(
        lambda: [i for i in table()["incidents"] if i["kind"] == "reader_disagreement"]
    )[0]
    assert incident["details"]["serial"] == "KD" and incident["details"]["camera"] is None
    assert table()["round"]["cards"] == ["9S", "2H"]
