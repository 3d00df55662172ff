"""The camera reader end to end: a video of cards sliding out of a shoe, through
``livetable camera read``, gives one event per card, in order, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware_sim.camera.faces import DESIGNS, render_joker
from hardware_sim.camera.video import SlidingVideo, sliding_cards, write_video
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.reader import CameraReader
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.source import (
    CaptureSource,
    FolderSource,
    FrameSource,
    FrameSourceError,
    open_source,
)
from shoe_reader.events import CardSeen, ReaderOffline, ReaderOnline, UnreadableCard
from tests.support.crash_harness import run_cli

from .conftest import HELDOUT

DEAL = ["AS", "TD", "7H", "QC", "2D", "KH"]


@pytest.fixture(scope="module")
def video() -> SlidingVideo:
    return sliding_cards(DEAL, HELDOUT, seed=5, table="wood")


@pytest.fixture(scope="module")
def video_file(video: SlidingVideo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("video") / "shoe.avi"
    write_video(video.frames, path)
    return path


def test_one_card_event_per_card_in_the_sliding_video(
    video: SlidingVideo, video_file: Path, heldout_calibration: Calibration
) -> None:
    reader = CameraReader(
        CaptureSource(str(video_file)), Recognizer(heldout_calibration, roi=video.roi), "cam-7"
    )
    events = list(reader.events())
    assert isinstance(events[0], ReaderOnline)
    assert isinstance(events[-1], ReaderOffline)
    cards = events[1:-1]
    # One event per card, each the right card (this deck's queens of clubs and spades
    # differ only in a small suit symbol: their corner index tells them apart).
    assert all(isinstance(e, CardSeen | UnreadableCard) for e in cards), cards
    got = [e.card if isinstance(e, CardSeen) else None for e in cards]
    assert got == DEAL
    # Each event names a frame in which that card was in view.
    for event, (first, last) in zip(cards, video.spans, strict=True):
        assert isinstance(event, CardSeen | UnreadableCard)
        assert event.frame is not None and first <= event.frame <= last
        assert event.reader_id == "cam-7"
        if isinstance(event, CardSeen):
            assert event.confidence is not None and event.confidence >= 0.5
    assert reader.frames_read == len(video.frames)


def test_cli_read_prints_one_json_line_per_event(
    video: SlidingVideo, video_file: Path, heldout_calibration_file: Path
) -> None:
    x, y, w, h = video.roi
    cmd = ["camera", "read", "--source", str(video_file)]
    cmd += ["--calibration", str(heldout_calibration_file), "--roi", f"{x},{y},{w},{h}"]
    result = run_cli(cmd, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [line["event"] for line in lines]
    assert kinds[0] == "online" and kinds[-1] == "offline" and len(kinds) == len(DEAL) + 2
    got = [line.get("card") if line["event"] == "card" else None for line in lines[1:-1]]
    assert got == DEAL
    assert all(isinstance(line["frame"], int) for line in lines[1:-1])
    assert all(0.5 <= line["confidence"] <= 1.0 for line in lines[1:-1] if line["event"] == "card")


def test_a_stray_card_from_another_deck_becomes_an_unreadable_event(
    heldout_calibration: Calibration, tmp_path: Path
) -> None:
    deal = ["9S", "4D", "JC"]
    clip = sliding_cards(deal, HELDOUT, seed=8, table="light")
    stray = sliding_cards(["6H"], DESIGNS["foreign"], seed=9, table="light")
    frames = clip.frames[: clip.spans[1][0]] + stray.frames + clip.frames[clip.spans[1][0] :]
    folder = tmp_path / "frames"
    write_video(frames, folder)
    reader = CameraReader(FolderSource(folder), Recognizer(heldout_calibration, roi=clip.roi))
    events = [e for e in reader.events() if isinstance(e, CardSeen | UnreadableCard)]
    assert [getattr(e, "card", "unreadable") for e in events] == ["9S", "unreadable", "4D", "JC"]
    assert isinstance(events[1], UnreadableCard) and events[1].reason


def test_a_joker_sliding_out_is_unreadable_not_a_card(
    heldout_calibration: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hardware_sim.camera.decks as decks_module  # where the clip's faces come from
    import hardware_sim.camera.video as video_module

    monkeypatch.setattr(decks_module, "face", lambda design, code: render_joker(design))
    clip = video_module.sliding_cards(["AS"], HELDOUT, seed=2, table="felt")
    recognizer = Recognizer(heldout_calibration, roi=clip.roi)

    class Frames(FolderSource):
        def __init__(self) -> None:
            self.description = "memory"

        def frames(self) -> Iterator[tuple[int, np.ndarray]]:
            yield from enumerate(clip.frames)

    events = [e for e in CameraReader(Frames(), recognizer).events()]
    assert [e.event for e in events] == ["online", "unreadable", "offline"]


def test_sources_that_cannot_be_opened_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FrameSourceError, match="no such file"):
        open_source(str(tmp_path / "missing.avi"))
    with pytest.raises(FrameSourceError, match="no images"):
        open_source(str(tmp_path))
    (tmp_path / "notes.txt").write_text("not a video")
    with pytest.raises(FrameSourceError, match="cannot open"):
        open_source(str(tmp_path / "notes.txt"))


def test_a_folder_source_reads_images_in_name_order(tmp_path: Path) -> None:
    for name, value in [("b.png", 20), ("a.png", 10), ("c.jpg", 30)]:
        cv2.imwrite(str(tmp_path / name), np.full((8, 8, 3), value, np.uint8))
    (tmp_path / "broken.png").write_bytes(b"nope")
    frames = list(open_source(str(tmp_path)).frames())
    assert [(i, int(f[0, 0, 0])) for i, f in frames] == [(0, 10), (1, 20), (3, 30)]


class _FlakyCamera(FrameSource):
    """A live camera that delivers a few frames, drops, and comes back ``comebacks`` times."""

    live = True
    description = "flaky"

    def __init__(self, sessions: list[list[np.ndarray]], comebacks: int) -> None:
        self.sessions = sessions
        self.comebacks = comebacks
        self.session = 0
        self.next = 0
        self.closed = False

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        for frame in self.sessions[self.session]:
            yield self.next, frame
            self.next += 1

    def reopen(self) -> bool:
        if self.comebacks == 0:
            return False
        self.comebacks -= 1
        self.session += 1
        return True

    def close(self) -> None:
        self.closed = True


def test_a_live_camera_that_drops_is_reported_offline_then_reopened(
    video: SlidingVideo, heldout_calibration: Calibration
) -> None:
    first, second = video.spans[0], video.spans[1]
    sessions = [video.frames[: first[1] + 4], video.frames[second[0] - 2 : second[1] + 4]]
    camera = _FlakyCamera(sessions, comebacks=1)
    waits: list[float] = []
    reader = CameraReader(
        camera,
        Recognizer(heldout_calibration, roi=video.roi),
        reconnect=3,
        reconnect_delay=0.5,
        sleep=waits.append,
    )
    events = list(reader.events())
    assert [(e.event, getattr(e, "card", None)) for e in events] == [
        ("online", None),
        ("card", DEAL[0]),
        ("offline", None),
        ("online", None),
        ("card", DEAL[1]),
        ("offline", None),
    ]
    online, dropped, card, again = events[3], events[2], events[4], events[5]
    assert isinstance(online, ReaderOnline) and online.restarted is True
    assert isinstance(dropped, ReaderOffline) and isinstance(again, ReaderOffline)
    assert dropped.reason == again.reason == "camera stopped delivering frames"
    assert isinstance(card, CardSeen) and card.frame is not None
    assert card.frame > len(sessions[0])  # frame numbers run on across the drop
    assert waits == [0.5, 0.5, 1.0, 2.0]  # one wait to come back, then three failing attempts
    assert camera.closed
