"""`livetable camera ...`: calibrate from the studio's deck, read a camera, make test data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from table_service.logs import configure_logging

# The recognizer (OpenCV, and the locator's compiled kernels) is imported by the
# commands that use it: every other `livetable` command starts without it.

if TYPE_CHECKING:
    from hardware_sim.camera.faces import CardDesign

app = typer.Typer(help="Camera card recognition.", no_args_is_help=True)
synth_app = typer.Typer(
    help="Synthetic camera: calibration photographs and test videos.", no_args_is_help=True
)
app.add_typer(synth_app, name="synth")


@app.callback()
def _camera_extra() -> None:
    """Camera card recognition."""
    from shoe_reader.camera.extra import CameraExtraMissing, require_camera

    try:  # every camera command needs OpenCV: a base install says which extra, in one line
        require_camera("livetable camera")
    except CameraExtraMissing as exc:
        print(exc, file=sys.stderr)
        raise typer.Exit(2) from None


@app.command("calibrate")
def calibrate_command(
    images: Path = typer.Option(..., "--images", help="Folder with one photo per face: AS.png …"),
    out: Path = typer.Option(..., "--out", help="Calibration file to write."),
    allow_missing: bool = typer.Option(
        False, "--allow-missing", help="Write even if some faces were unusable."
    ),
) -> None:
    """Learn the studio's deck from one photograph of each of its 52 faces."""
    from shoe_reader.camera.calibration import CalibrationError
    from shoe_reader.camera.learn import calibrate

    configure_logging()
    try:
        cal, problems = calibrate(images, allow_missing=allow_missing)
    except CalibrationError as exc:
        for p in exc.problems:
            print(f"{p.file}: {p.reason}", file=sys.stderr)
        print(f"calibration refused: {exc.reason}", file=sys.stderr)
        raise typer.Exit(1) from None
    for p in problems:
        print(f"{p.file}: {p.reason}", file=sys.stderr)
    cal.save(out)
    faces = len(set(cal.cards))
    print(f"calibrated {faces} faces ({len(cal.cards)} corner indices) -> {out}")


@app.command()
def read(
    source: str = typer.Option(
        ..., "--source", help="Device index (0), video file, RTSP/HTTP URL, or image folder."
    ),
    calibration: Path = typer.Option(..., "--calibration", help="File from `camera calibrate`."),
    roi: str | None = typer.Option(None, "--roi", help="Region of interest x,y,w,h in pixels."),
    reader_id: str = typer.Option("camera", "--reader-id", help="Reader name in the events."),
    min_confidence: float = typer.Option(
        0.5,
        "--min-confidence",
        min=0.0,
        max=1.0,
        help="Per-frame confidence that counts as a vote.",
    ),
    reconnect: int = typer.Option(
        10, "--reconnect", min=0, help="Attempts to reopen a live camera or stream that drops."
    ),
) -> None:
    """Print one JSON line per reader event seen by the camera (logs go to stderr)."""
    from shoe_reader.camera.calibration import Calibration, CalibrationError
    from shoe_reader.camera.reader import CameraReader
    from shoe_reader.camera.recognize import Recognizer
    from shoe_reader.camera.roi import RoiError, parse_roi
    from shoe_reader.camera.source import FrameSourceError, open_source
    from shoe_reader.camera.voting import VotingRules

    configure_logging()
    try:
        region = parse_roi(roi) if roi else None
    except RoiError as exc:
        raise typer.BadParameter(str(exc), param_hint="--roi") from None
    try:
        cal = Calibration.load(calibration)
    except CalibrationError as exc:
        print(f"error: {exc.reason}", file=sys.stderr)
        raise typer.Exit(2) from None
    try:
        frames = open_source(source)
    except FrameSourceError as exc:
        print(f"error: {exc.reason}", file=sys.stderr)
        raise typer.Exit(2) from None
    reader = CameraReader(
        frames,
        Recognizer(cal, roi=region),
        reader_id=reader_id,
        rules=VotingRules(min_confidence=min_confidence),
        reconnect=reconnect,
    )
    try:
        for event in reader.events():
            print(json.dumps(event.to_json()), flush=True)
    except RoiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None


def _design(name: str) -> CardDesign | str:
    """A drawn design, or a published deck rendered from its Debian package."""
    from hardware_sim.camera.faces import DESIGNS
    from hardware_sim.camera.published import DECKS

    if name in DESIGNS:
        return DESIGNS[name]
    if name in DECKS:
        return name
    known = ", ".join([*DESIGNS, *DECKS])
    raise typer.BadParameter(f"unknown design {name!r}; one of {known}")


@synth_app.command("calibration")
def synth_calibration(
    out: Path = typer.Option(..., "--out", help="Folder for AS.png … KC.png."),
    design: str = typer.Option(
        "classic", "--design", help="Card design to photograph (drawn, or a published deck)."
    ),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Photograph every face of a synthetic deck, as a studio would for calibration."""
    from hardware_sim.camera.synth import write_calibration_set

    paths = write_calibration_set(_design(design), out, seed=seed)
    print(f"wrote {len(paths)} photographs to {out}")


@synth_app.command("video")
def synth_video(
    out: Path = typer.Option(..., "--out", help="An .avi file, or a folder for numbered JPEGs."),
    cards: str = typer.Option("AS,TD,7H,QC,2D", "--cards", help="Cards to deal, in order."),
    design: str = typer.Option("classic", "--design"),
    table: str = typer.Option("felt", "--table", help="felt, dark, wood, light or grey."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Render cards sliding out of a shoe under the camera; prints the region to read."""
    from hardware_sim.camera.video import sliding_cards, write_video
    from table_service.rules.cards import CardError, parse_cards

    try:
        codes = [c.code for c in parse_cards(x for x in cards.split(",") if x.strip())]
    except CardError as exc:
        raise typer.BadParameter(str(exc), param_hint="--cards") from None
    video = sliding_cards(codes, _design(design), seed=seed, table=table)
    write_video(video.frames, out)
    x, y, w, h = video.roi
    print(
        json.dumps({"frames": len(video.frames), "cards": codes, "roi": f"{x},{y},{w},{h}"}),
    )
