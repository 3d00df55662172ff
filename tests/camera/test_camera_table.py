"""The camera at a live table: alone, and cross-checking the serial shoe.

A virtual shoe on a pseudo-terminal deals; each card it deals also slides past
a synthetic camera (the published ``plastic`` deck, rendered and degraded),
whose frames go through the real recognizer and voting. The table runs behind
its HTTP API on SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hardware_sim.camera.live import SyntheticCamera
from hardware_sim.camera.synth import write_calibration_set
from hardware_sim.camera.video import ROI
from hardware_sim.virtual_shoe import VirtualShoe
from shoe_reader.camera.calibration import calibrate
from table_service.table.config import CameraConfig, ShoeConfig, TableConfig
from tests.support.table_rig import InProcessTable, in_process_table

DECK = "plastic"
ROI_TEXT = ",".join(str(v) for v in ROI)


async def test_the_demo_plays_rounds_with_both_readers_and_real_recognition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``livetable demo --reader both``: the shoe and a camera over it, every card cross-checked
    (the camera alone at a table: test_a_table_runs_on_the_camera_alone).

    First in this module: a serial reader another test leaves reconnecting to a freed
    pseudo-terminal number can take the demo shoe's port when the number is reused."""
    reader = "both"
    import io

    from rich.console import Console

    from table_service.demo.run import DemoOptions, run_demo

    for name in ("LIVETABLE_DATABASE_URL", "LIVETABLE_DATA_DIR", "LIVETABLE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
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
    assert (tmp_path / "data" / "camera" / "plastic.npz").exists()


@pytest.fixture(scope="module")
def deck_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    photos = tmp_path_factory.mktemp("plastic-photos")
    write_calibration_set(DECK, photos, seed=5, backdrop="grey")
    cal, problems = calibrate(photos)
    assert problems == []
    path = photos.parent / "plastic.npz"
    cal.save(path)
    return path


def _rig(make_runtime, config: TableConfig) -> Iterator[InProcessTable]:  # type: ignore[no-untyped-def]
    with in_process_table(make_runtime(), config, reader_options={"offline_timeout": 3.0}) as table:
        yield table


@pytest.fixture
def alone(make_runtime, deck_file: Path) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    name = f"cam-{uuid.uuid4().hex[:8]}"
    camera = SyntheticCamera(DECK, name=name, seed=2)
    config = TableConfig(
        table_id="bac-cam",
        betting_seconds=30,
        camera=CameraConfig(source=f"sim:{name}", calibration=str(deck_file), roi=ROI_TEXT),
    )
    try:
        for table in _rig(make_runtime, config):
            yield {"rig": table, "post": table.post, "table": table.table, "camera": camera}
    finally:
        camera.stop()


def test_a_table_runs_on_the_camera_alone(alone: dict[str, Any]) -> None:
    post, camera = alone["post"], alone["camera"]
    cards = iter(["2S", "3H", "4H", "2S", "5H", "KD", "TC", "3S", "9S", "2H"])
    alone["rig"].insert_shoe(lambda: camera.card_dealt(next(cards)))
    post("/tables/bac-cam/betting/open", "dealer")
    post("/tables/bac-cam/betting/close", "dealer")
    state = alone["rig"].deal_round(lambda: camera.card_dealt(next(cards)), stop_on_incident=True)
    assert state["incidents"] == []
    assert state["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]
    assert state["round"]["outcome"]["winner"] == "tie"


@pytest.fixture
def both(make_runtime, deck_file: Path) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    name = f"cam-{uuid.uuid4().hex[:8]}"
    camera = SyntheticCamera(DECK, name=name, seed=4)
    shoe = VirtualShoe("framed", seed=7, heartbeat=0.2, retransmit_interval=0.1)
    shoe.observers.append(camera.card_dealt)
    shoe.load(["2S", "3H", "4H", "2S", "5H", "KD", "TC", "3S", "9S", "2H", "KD"] + ["KH"] * 20)
    shoe.start()
    config = TableConfig(
        table_id="bac-2r",
        betting_seconds=30,
        shoe=ShoeConfig(port=shoe.device_path),
        camera=CameraConfig(
            source=f"sim:{name}", calibration=str(deck_file), roi=ROI_TEXT, window_seconds=20
        ),
    )
    try:
        for table in _rig(make_runtime, config):
            yield {
                "rig": table,
                "post": table.post,
                "table": table.table,
                "shoe": shoe,
                "camera": camera,
            }
    finally:
        shoe.stop()
        camera.stop()


def test_both_readers_agree_then_a_disagreement_stops_the_round(both: dict[str, Any]) -> None:
    post, table, shoe, camera = both["post"], both["table"], both["shoe"], both["camera"]
    wait_for, deal_round = both["rig"].wait_for, both["rig"].deal_round
    both["rig"].insert_shoe(shoe.deal)
    post("/tables/bac-2r/betting/open", "dealer")
    post("/tables/bac-2r/betting/close", "dealer")
    wait_for(lambda: not shoe.locked)
    state = deal_round(shoe.deal, stop_on_incident=True)
    assert state["incidents"] == [], state["incidents"]
    assert state["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]

    post("/tables/bac-2r/betting/open", "dealer")
    post("/tables/bac-2r/betting/close", "dealer")
    wait_for(lambda: not shoe.locked)
    shoe.deal()  # 9S, seen by both
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
