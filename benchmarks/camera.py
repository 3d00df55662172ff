"""Camera card recognition on published decks: accuracy per deck and degradation level,
confident misreads, milliseconds per 1280x720 frame on one core, calibration time.

    python benchmarks/camera.py [--decks anglo,plastic,...] [--passes 30] [--frames 8]
    python benchmarks/camera.py --check --levels moderate
    python benchmarks/camera.py --levels studio --passes 200 --cache /work/cache/camera --jobs 2

``--check`` reads, instead of the fourteen development decks, the other
French-suited decks of the same Debian packages, which the reader was never
tuned on (hardware_sim.camera.published.CHECK_DECKS).

Every deck is calibrated from its own 52 studio photographs (grey mat, as a
studio would take them), then read on fresh frames on the other tables (felt,
dark, wood, light, grey) at each level. A *pass* is one card seen in several
frames (as when it slides out of the shoe) and voted on as the live reader
does: "card read" is the share of passes reported as the right card, "card
misread" the share reported as a wrong one (must be 0), the rest became an
unreadable-card event for the supervisor. The per-frame figures are the same
frames read one by one. Speed is the recognizer alone on each full frame,
single-threaded ("ms/frame" the median, with the mean and the 95th percentile
beside it), with a floor measured on the same frames: one grey conversion and
one blur of the whole frame (what any reader must at least spend). "cpu ms" and
its floor are the same medians on the thread's CPU clock: on a machine shared
with other work, the wall clock also counts the time the reader waited for a core.

``--cache DIR`` keeps every frame drawn (hardware_sim.camera.frame_cache): a second run
reads the same frames from the disk instead of drawing them again (~50 ms of CPU a frame,
the reader ~5). ``--jobs N`` reads N decks at once in separate processes (each still one
thread, its times on its own thread's clock).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hardware_sim.camera.decks import face
from hardware_sim.camera.faces import all_codes
from hardware_sim.camera.frame_cache import FrameCache, Pass, cached_folder, deck_folder
from hardware_sim.camera.published import CHECK_DECKS, DECKS
from hardware_sim.camera.scene import LEVELS, card_pass, photograph
from hardware_sim.camera.synth import write_calibration_set
from shoe_reader.camera.calibration import Calibration, CalibrationError
from shoe_reader.camera.learn import calibrate
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.voting import Voter
from shoe_reader.events import CardSeen, UnreadableCard
from table_service.logs import configure_logging

MIN_CONFIDENCE = 0.5
TABLES = ("felt", "dark", "wood", "light", "grey")
PASS_LEVELS = frozenset({"studio"})
"""Levels whose passes are one card moving through the view (see ``card_pass``); at the
others each frame of a pass is a fresh photograph of the card."""


def _calibrate(
    deck: str, seed: int, cache: Path | None = None
) -> tuple[Calibration | None, float, float, str]:
    """The deck's calibration (``None``: refused), its wall-clock and CPU seconds, and why
    it was refused (the photographs kept under ``cache``, if given)."""
    with tempfile.TemporaryDirectory() as tmp:
        photos = Path(tmp)
        if cache is None:
            write_calibration_set(deck, photos, seed=seed, backdrop="grey")
        else:
            photos = cached_folder(
                deck_folder(cache, deck) / f"calibration-s{seed}-grey",
                lambda folder: write_calibration_set(deck, folder, seed=seed, backdrop="grey"),
            )
        t, c = time.perf_counter(), time.thread_time()
        try:
            cal, _problems = calibrate(photos)
        except CalibrationError as exc:
            names = ", ".join(f"{p.card} ({p.reason})" for p in exc.problems[:4])
            why = f"refused: {exc.reason}: {names}"
            return None, time.perf_counter() - t, time.thread_time() - c, why
        return cal, time.perf_counter() - t, time.thread_time() - c, ""


def _floor_ms(frame: np.ndarray) -> tuple[float, float]:
    """The floor's wall-clock and CPU milliseconds on ``frame``."""
    t, c = time.perf_counter(), time.thread_time()
    gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    cv2.GaussianBlur(gray, (3, 3), 0)
    return (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000


def _level(
    cal: Calibration,
    deck: str,
    level: str,
    passes: int,
    frames: int,
    seed: int,
    why: list[str] | None = None,
    cache: Path | None = None,
) -> dict[str, float]:
    rec = Recognizer(cal)
    rng = np.random.default_rng(seed)
    kept = FrameCache(cache, deck, level, seed, frames) if cache is not None else None
    codes = all_codes()
    stats: dict[str, float] = {
        "frames": 0,
        "frame_read": 0,
        "frame_wrong": 0,
        "card_read": 0,
        "card_wrong": 0,
    }
    times: list[float] = []
    floors: list[float] = []
    cpu: list[float] = []  # the same on this thread's CPU clock (a shared machine's other
    cpu_floors: list[float] = []  # work does not count, its caches' contention does)
    for k in range(passes):
        table = TABLES[k % len(TABLES)]

        def draw(jpegs: list[bytes], table: str = table) -> Pass:
            code = codes[int(rng.integers(len(codes)))]
            if level in PASS_LEVELS:
                shots = card_pass(face(deck, code), LEVELS[level], rng, table, frames, jpegs)
            else:
                shots = [
                    photograph(face(deck, code), LEVELS[level], rng, table, jpegs)
                    for _ in range(frames)
                ]
            return Pass(code, [f for f, _q in shots], np.array([q for _f, q in shots]))

        shown = draw([]) if kept is None else kept.get(k, rng, draw)
        code = shown.code
        voter = Voter("bench")
        events = []
        for i, frame in enumerate(shown.frames):
            t, c = time.perf_counter(), time.thread_time()
            seen = rec.read_frame(frame)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
            floor, cpu_floor = _floor_ms(frame)
            floors.append(floor)
            cpu_floors.append(cpu_floor)
            stats["frames"] += 1
            read = seen.read
            if read is not None and read.code is not None and read.confidence >= MIN_CONFIDENCE:
                stats["frame_read" if read.code == code else "frame_wrong"] += 1
            events += voter.feed(i, seen)
        events += voter.finish()
        cards = [e.card for e in events if isinstance(e, CardSeen)]
        if cards:
            stats["card_read" if cards == [code] else "card_wrong"] += 1
            if cards != [code] and why is not None:
                why.append(f"pass {k}: {code} read as {cards}")
        elif why is not None:
            why += [
                f"pass {k}: {code}: {e.reason} [{e.cause}]"
                for e in events
                if isinstance(e, UnreadableCard)
            ]
    stats["ms"] = statistics.median(times)
    stats["mean_ms"] = statistics.fmean(times)
    stats["p95_ms"] = float(np.percentile(times, 95))
    stats["floor_ms"] = statistics.median(floors)
    stats["cpu_ms"] = statistics.median(cpu)
    stats["cpu_floor_ms"] = statistics.median(cpu_floors)
    return stats


def _setup() -> None:
    """One thread for OpenCV and the BLAS, logs to stderr (also in each --jobs process)."""
    configure_logging(level="WARNING")  # logs to stderr; the figures alone on stdout
    cv2.setNumThreads(1)
    threadpool_limits(limits=1)


def _deck(
    deck: str, args: argparse.Namespace, levels: list[str]
) -> tuple[list[str], dict[str, list[int]], float]:
    """One deck's printed lines, its (passes, read, misread) per level and its calibration's
    wall-clock seconds."""
    every = [*DECKS, *CHECK_DECKS]
    cache = Path(args.cache) if args.cache else None
    lines: list[str] = []
    totals = {lvl: [0, 0, 0] for lvl in levels}
    # Seeded by the deck's place among all decks: a deck run alone (or in
    # a share of the decks on another core) gets the frames of a full run.
    i = every.index(deck)
    cal, seconds, cpu_seconds, why = _calibrate(deck, args.seed + i, cache)
    if cal is None:
        return [f"{deck:<18} calibration {why} ({seconds:.1f} s)"], totals, seconds
    for j, level in enumerate(levels):
        missed: list[str] | None = [] if args.why else None
        s = _level(
            cal, deck, level, args.passes, args.frames, args.seed + 100 * i + j, missed, cache
        )
        n, f = args.passes, s["frames"]
        totals[level][0] += n
        totals[level][1] += int(s["card_read"])
        totals[level][2] += int(s["card_wrong"])
        lines.append(
            f"{deck if j == 0 else '':<18} {level:<9} {s['card_read'] / n:>9.1%} "
            f"{s['card_wrong'] / n:>8.1%} {s['frame_read'] / f:>10.1%} "
            f"{s['frame_wrong'] / f:>8.1%} {s['ms']:>9.2f} {s['mean_ms']:>6.2f} "
            f"{s['p95_ms']:>6.2f} {s['floor_ms']:>6.2f} "
            f"{s['ms'] / max(s['floor_ms'], 1e-6):>6.1f} {s['cpu_ms']:>7.2f} "
            f"{s['cpu_floor_ms']:>6.2f} {s['cpu_ms'] / max(s['cpu_floor_ms'], 1e-6):>6.1f}"
        )
        lines += [f"{'':<18}   {line}" for line in missed or []]
    lines.append(
        f"{'':<18} calibration of 52 photographs: {seconds:.1f} s ({cpu_seconds:.1f} s of CPU)"
    )
    return lines, totals, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decks", default=None, help="default: the development decks")
    parser.add_argument(
        "--check", action="store_true", help="read the decks never tuned on (CHECK_DECKS)"
    )
    parser.add_argument("--levels", default="mild,moderate,harsh,studio")
    parser.add_argument("--passes", type=int, default=30, help="card passes per deck and level")
    parser.add_argument("--frames", type=int, default=8, help="frames per pass")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--why", action="store_true", help="list each pass not read, and why, under its row"
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="keep the frames drawn under DIR and read them from there on the next run "
        "(e.g. /work/cache/camera; default: draw every frame anew)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="decks read at once, in separate processes"
    )
    args = parser.parse_args()
    decks = args.decks.split(",") if args.decks else list(CHECK_DECKS if args.check else DECKS)
    every = [*DECKS, *CHECK_DECKS]
    unknown = [d for d in decks if d not in every]
    if unknown:
        parser.error(f"unknown deck(s) {', '.join(unknown)}; one of {', '.join(every)}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    _setup()
    levels = args.levels.split(",")
    print(
        f"OpenCV {cv2.__version__}, one thread; {args.passes} passes of {args.frames} frames "
        f"per deck and level; confident = {MIN_CONFIDENCE}"
        + (f"; frames kept in {args.cache}" if args.cache else "")
        + (f"; {args.jobs} decks at once" if args.jobs > 1 else "")
        + f"; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    header = (
        f"{'deck':<18} {'level':<9} {'card read':>9} {'misread':>8} "
        f"{'frame read':>10} {'misread':>8} {'ms/frame':>9} {'mean':>6} {'p95':>6} {'floor':>6} "
        f"{'ratio':>6} {'cpu ms':>7} {'floor':>6} {'ratio':>6}"
    )
    print(header, flush=True)
    totals = {lvl: [0, 0, 0] for lvl in levels}
    cal_times = []
    results: Iterable[tuple[list[str], dict[str, list[int]], float]]
    if args.jobs == 1:
        results = (_deck(deck, args, levels) for deck in decks)
        pool = None
    else:
        pool = ProcessPoolExecutor(max_workers=args.jobs, initializer=_setup)
        results = pool.map(_deck, decks, [args] * len(decks), [levels] * len(decks))
    try:
        for lines, deck_totals, seconds in results:
            print("\n".join(lines), flush=True)
            cal_times.append(seconds)
            for level, row in deck_totals.items():
                totals[level] = [a + b for a, b in zip(totals[level], row, strict=True)]
    finally:
        if pool is not None:
            pool.shutdown()
    print()
    for level, (n, ok, wrong) in totals.items():
        if n:
            print(f"all decks, {level:<9}: {ok / n:.1%} of cards read, {wrong} misread of {n}")
    if cal_times:
        mid, top = statistics.median(cal_times), max(cal_times)
        print(f"calibration: median {mid:.1f} s, max {top:.1f} s")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
