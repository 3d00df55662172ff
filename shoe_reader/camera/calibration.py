"""Calibration: the studio's own deck, photographed once, one face per file.

Every deck prints its indices in its own font, size, colours and place, so the
recognizer learns them from photographs of the deck it will read rather than
from built-in templates. Both corner windows of every face are kept as feature
maps; from them the calibration learns where this deck's rank and suit can be
told apart (see :mod:`shoe_reader.camera.index`) and keeps each face's look
there as a template, with the card's proportions for the locator.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import cv2
import numpy as np
import structlog

from shoe_reader.camera.index import (
    FEAT_H,
    FEAT_W,
    NoIndex,
    Part,
    corners_of,
    features,
    learn_part,
)
from shoe_reader.camera.locate import Locator, straighten
from table_service.rules.cards import RANKS, SUITS, CardError, parse_card

log = structlog.get_logger(__name__)

FORMAT = "livetable-camera-calibration"
VERSION = 2
SOFTER = (1.0,)
"""Blur (straightened-card pixels) of the extra, softer copies of each calibration corner."""
BLANK_INK = 0.3
BLANK_SHARE = 0.005
"""A corner with less than this share of its window inked holds no index."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


class CalibrationError(Exception):
    """A calibration that cannot be made or loaded; ``reason`` says why and
    ``problems`` lists each face that could not be used."""

    def __init__(self, reason: str, problems: list[FaceProblem] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.problems = problems or []


@dataclass(frozen=True)
class FaceProblem:
    """A photograph (or a missing one) the calibration could not use."""

    card: str
    file: str
    reason: str


@dataclass(frozen=True)
class Calibration:
    """Samples from a studio deck: one feature map per corner window of every face."""

    cards: tuple[str, ...]  # the card of each sample
    maps: np.ndarray  # (n, FEAT_H, FEAT_W, 3) float32
    aspect: float  # card width / height as photographed
    soft: np.ndarray  # (n,) bool: a softened copy, not the photograph itself

    @cached_property
    def ranks(self) -> np.ndarray:
        return np.array([c[0] for c in self.cards])

    @cached_property
    def suits(self) -> np.ndarray:
        return np.array([c[1] for c in self.cards])

    @cached_property
    def rank_part(self) -> Part:
        return learn_part(self.maps, self.ranks)

    @cached_property
    def suit_part(self) -> Part:
        return learn_part(self.maps, self.suits)

    def without(self, card: str) -> Calibration:
        """The same calibration minus one face's samples (for leave-one-out checks)."""
        keep = np.array([c != card for c in self.cards])
        return Calibration(
            cards=tuple(c for c in self.cards if c != card),
            maps=self.maps[keep],
            aspect=self.aspect,
        )

    def save(self, path: Path) -> None:
        """Write the calibration atomically (a temporary file renamed into place)."""
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "feat": [FEAT_H, FEAT_W],
            "aspect": self.aspect,
        }
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            meta=np.array(json.dumps(meta)),
            cards=np.array(self.cards),
            maps=self.maps.astype(np.float16),
            soft=self.soft,
        )
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Calibration:
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") != FORMAT:
                    raise CalibrationError(f"{path} is not a camera calibration")
                if meta.get("version") != VERSION or meta.get("feat") != [FEAT_H, FEAT_W]:
                    raise CalibrationError(f"{path}: unsupported calibration version")
                cal = cls(
                    cards=tuple(str(c) for c in data["cards"]),
                    maps=data["maps"].astype(np.float32),
                    aspect=float(meta["aspect"]),
                    soft=data["soft"].astype(bool),
                )
        except CalibrationError:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise CalibrationError(f"cannot read calibration {path}: {exc}") from exc
        missing = [r for r in RANKS if r not in set(cal.ranks)] + [
            s for s in SUITS if s not in set(cal.suits)
        ]
        if missing:
            raise CalibrationError(f"{path}: calibration lacks {', '.join(missing)}")
        return cal


def _face_files(folder: Path) -> tuple[dict[str, Path], list[FaceProblem]]:
    found: dict[str, Path] = {}
    problems: list[FaceProblem] = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        try:
            code = parse_card(path.stem).code
        except CardError:
            problems.append(
                FaceProblem("?", path.name, "file name is not a card code like AS or TD")
            )
            continue
        if code in found:
            problems.append(FaceProblem(code, path.name, f"second photograph of {code}"))
            continue
        found[code] = path
    return found, problems


def measure_face(image: np.ndarray, locator: Locator) -> tuple[list[np.ndarray], float]:
    """The feature maps of both corner windows of the one card in a photograph, and its aspect."""
    outline = locator.find(image)
    if outline.quad is None:
        raise NoIndex(f"no whole card found ({outline.why})")
    q = outline.quad
    short = (np.linalg.norm(q[1] - q[0]) + np.linalg.norm(q[2] - q[3])) / 2
    long_ = (np.linalg.norm(q[3] - q[0]) + np.linalg.norm(q[2] - q[1])) / 2
    card = straighten(image, q)
    sharp = [features(c) for c in corners_of(card)]
    # Ink away from the card's edge (a sliver of table may show at the very edge).
    if max(float((m[2:, 2:, 0] > BLANK_INK).mean()) for m in sharp) < BLANK_SHARE:
        raise NoIndex("corner is blank: no index printed in either corner")
    # The camera over the shoe sees the deck smaller, moving and less sharp than
    # the calibration photograph: each corner is also learned as a softer lens
    # would show it, so a blurred frame is near its own face's soft copy rather
    # than half-way to a face whose sharp details differ.
    soft = [
        features(cv2.GaussianBlur(c, (0, 0), sigma)) for sigma in SOFTER for c in corners_of(card)
    ]
    return sharp + soft, float(short / long_)


def build(samples: dict[str, list[np.ndarray]], aspect: float) -> Calibration:
    cards = [code for code, maps in samples.items() for _ in maps]
    flat = [m for maps in samples.values() for m in maps]
    soft = [i >= 2 for maps in samples.values() for i in range(len(maps))]  # sharp corners first
    return Calibration(
        cards=tuple(cards), maps=np.array(flat, np.float32), aspect=aspect, soft=np.array(soft)
    )


def calibrate(folder: Path, allow_missing: bool = False) -> tuple[Calibration, list[FaceProblem]]:
    """Learn a deck from ``folder`` (one photograph per face, named ``AS.png`` …).

    Returns the calibration and every face that could not be used, with why.
    Refuses (:class:`CalibrationError`) when a face is unusable, unless
    ``allow_missing`` and every rank and every suit still has a sample.
    """
    from shoe_reader.camera.recognize import check_deck  # avoid an import cycle

    if not folder.is_dir():
        raise CalibrationError(f"{folder} is not a folder")
    files, problems = _face_files(folder)
    locator = Locator(aspect_tolerance=0.2)
    samples: dict[str, list[np.ndarray]] = {}
    aspects: list[float] = []
    for code in (r + s for s in SUITS for r in RANKS):
        path = files.get(code)
        if path is None:
            problems.append(FaceProblem(code, f"{code}.png", "no photograph of this face"))
            continue
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            problems.append(FaceProblem(code, path.name, "not a readable image"))
            continue
        try:
            found, aspect = measure_face(image, locator)
        except NoIndex as exc:
            problems.append(FaceProblem(code, path.name, exc.reason))
            continue
        samples[code] = found
        aspects.append(aspect)
    if not samples:
        raise CalibrationError("no usable photograph", problems)
    cal = build(samples, float(np.median(aspects)))
    # Each face must be recognised by the rest of the deck: a photograph under
    # the wrong name (AH.png showing the ace of spades) would teach a misread;
    # and faces whose index cannot be told apart would be read by a coin toss.
    for code, reason in check_deck(cal).items():
        problems.append(FaceProblem(code, files[code].name, reason))
        samples.pop(code, None)
    if not samples:
        raise CalibrationError("no usable photograph", problems)
    cal = build(samples, cal.aspect)
    missing = [r for r in RANKS if r not in set(cal.ranks)] + [
        s for s in SUITS if s not in set(cal.suits)
    ]
    if missing:
        raise CalibrationError(f"no usable photograph for {', '.join(missing)}", problems)
    if problems and not allow_missing:
        raise CalibrationError(f"{len(problems)} face(s) could not be used", problems)
    log.info("calibrated", faces=len(samples), samples=len(cal.cards), aspect=cal.aspect)
    return cal, problems
