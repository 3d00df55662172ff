"""Camera card recognition: speed per 1280x720 frame on one core, and accuracy /
confident-misread rate per degradation level.

    python benchmarks/camera.py [--frames N] [--designs classic,heldout] [--seed S]

Each design is calibrated from its own synthetic studio photographs (as a
studio would photograph its deck), then read on fresh frames at every
degradation level. "accuracy" is the share of frames read confidently and
correctly; "misread" is the share read confidently and wrongly (the figure
that must stay at zero); the rest were rejected (they would be outvoted by
other frames of the same pass, or become an unreadable-card event). The
held-out design is never used to tune the recognizer. Also: one pass of a
sliding-card video per design, counting card events.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hardware_sim.camera.faces import DESIGNS, TEST_ONLY_DESIGNS, CardDesign
from hardware_sim.camera.scene import LEVELS
from hardware_sim.camera.synth import shots, write_calibration_set
from hardware_sim.camera.video import sliding_cards
from shoe_reader.camera.calibration import Calibration, calibrate
from shoe_reader.camera.reader import CameraReader
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.source import FrameSource
from shoe_reader.events import CardSeen, UnreadableCard
from table_service.logs import configure_logging

MIN_CONFIDENCE = 0.5
READ_LEVELS = ("clean", "mild", "moderate", "harsh")


class _Memory(FrameSource):
    def __init__(self, frames: list[np.ndarray]) -> None:
        self._frames = frames
        self.description = "memory"

    def frames(self):  # type: ignore[no-untyped-def]
        yield from enumerate(self._frames)


def _calibrate(design: CardDesign, seed: int) -> Calibration:
    with tempfile.TemporaryDirectory() as tmp:
        write_calibration_set(design, Path(tmp), seed=seed)
        cal, problems = calibrate(Path(tmp), allow_missing=True)
    if problems:
        print(f"  {design.name}: calibration could not use {[p.file for p in problems]}")
    return cal


def _speed(cal: Calibration, design: CardDesign, seed: int) -> None:
    frames = [s.frame for s in shots(design, LEVELS["mild"], 40, seed=seed)]
    empty = [s.frame for s in shots(design, LEVELS["mild"], 10, seed=seed + 1)]
    for f in empty:  # a table with no card: the cheapest case, included for the mix
        f[:] = cv2.GaussianBlur(f, (0, 0), 40)
    rec = Recognizer(cal)
    for f in frames[:5]:
        rec.read_frame(f)  # warm caches
    timings = []
    for _ in range(3):
        for f in frames:
            t = time.perf_counter()
            rec.read_frame(f)
            timings.append((time.perf_counter() - t) * 1000)
    empty_t = []
    for f in empty:
        t = time.perf_counter()
        rec.read_frame(f)
        empty_t.append((time.perf_counter() - t) * 1000)
    timings.sort()
    p95 = timings[int(0.95 * len(timings))]
    print(
        f"  full 1280x720 frame with a card: median {statistics.median(timings):.2f} ms, "
        f"mean {statistics.fmean(timings):.2f} ms, p95 {p95:.2f} ms ({len(timings)} frames)"
    )
    print(f"  full frame, no card:             median {statistics.median(empty_t):.2f} ms")
    video = sliding_cards(["AS", "TD", "QH"], design, seed=seed)
    rec_roi = Recognizer(cal, roi=video.roi)
    t = time.perf_counter()
    for f in video.frames:
        rec_roi.read_frame(f)
    per = (time.perf_counter() - t) * 1000 / len(video.frames)
    _x, _y, w, h = video.roi
    print(f"  shoe video, region {w}x{h}:       mean {per:.2f} ms per frame")


def _accuracy(cal: Calibration, design: CardDesign, frames: int, seed: int) -> None:
    rec = Recognizer(cal)
    print(f"  {'level':<9} {'frames':>6} {'accuracy':>9} {'misread':>8} {'rejected':>9}")
    for level in READ_LEVELS:
        correct = wrong = 0
        for shot in shots(design, LEVELS[level], frames, seed=seed + len(level)):
            seen = rec.read_frame(shot.frame)
            read = seen.read
            if read is None or read.code is None or read.confidence < MIN_CONFIDENCE:
                continue
            if read.code == shot.card:
                correct += 1
            else:
                wrong += 1
        rejected = frames - correct - wrong
        print(
            f"  {level:<9} {frames:>6} {correct / frames:>9.1%} {wrong / frames:>8.1%}"
            f" {rejected / frames:>9.1%}"
        )


def _video(cal: Calibration, design: CardDesign, seed: int) -> None:
    deal = ["AS", "KD", "TC", "7H", "QS", "2D", "9C", "JH", "5S", "8D"]
    events_by_table = []
    for table in ("felt", "light"):
        video = sliding_cards(deal, design, seed=seed, table=table)
        reader = CameraReader(_Memory(video.frames), Recognizer(cal, roi=video.roi))
        events = [e for e in reader.events() if isinstance(e, CardSeen | UnreadableCard)]
        cards = [e.card for e in events if isinstance(e, CardSeen)]
        right = sum(1 for a, b in zip(cards, deal, strict=False) if a == b)
        unreadable = sum(isinstance(e, UnreadableCard) for e in events)
        events_by_table.append(
            f"{table}: {len(events)} events for {len(deal)} cards, {right} right, "
            f"{unreadable} unreadable"
        )
    print("  sliding-card video: " + "; ".join(events_by_table))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100, help="frames per level per design")
    parser.add_argument("--designs", default="classic,casino,jumbo,heldout")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    configure_logging(level="WARNING")  # logs to stderr; the figures alone on stdout
    cv2.setNumThreads(1)
    all_designs = {**DESIGNS, **TEST_ONLY_DESIGNS}
    print(f"OpenCV {cv2.__version__}, cv2.setNumThreads(1), {args.frames} frames per level\n")
    for i, name in enumerate(args.designs.split(",")):
        design = all_designs[name]
        tag = " (held out: never tuned on)" if name in TEST_ONLY_DESIGNS else " (development)"
        print(f"design {name}{tag}")
        cal = _calibrate(design, args.seed + i)
        if i == 0:
            _speed(cal, design, args.seed)
        _accuracy(cal, design, args.frames, args.seed + 100 * i)
        _video(cal, design, args.seed + i)
        print()


if __name__ == "__main__":
    main()
