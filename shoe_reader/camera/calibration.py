"""Calibration: the studio's own deck, photographed once, one face per file.

Every deck prints its indices in its own font, size, colours and place, so the
recognizer learns them from photographs of the deck it will read rather than
from built-in templates. Both corner indices of every face are kept as
samples: the rank shapes, the suit shapes, the ink colour of each suit, where
the index sits on the card, and the card's proportions.
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

from shoe_reader.camera.index import GLYPH, CornerIndex, NoIndex, corners, read_corner
from shoe_reader.camera.locate import Locator, straighten
from table_service.rules.cards import RANKS, SUITS, CardError, parse_card

log = structlog.get_logger(__name__)

FORMAT = "livetable-camera-calibration"
VERSION = 1
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
    """Samples from a studio deck: one row per readable corner index."""

    cards: tuple[str, ...]  # the card of each sample
    rank_vectors: np.ndarray  # (n, GLYPH*GLYPH) float32
    suit_vectors: np.ndarray
    rank_boxes: np.ndarray  # (n, 4) x, y, w, h on the straightened card
    suit_boxes: np.ndarray
    colours: np.ndarray  # (n, 2) suit ink colour of each sample
    aspect: float  # card width / height as photographed

    @cached_property
    def ranks(self) -> np.ndarray:
        return np.array([c[0] for c in self.cards])

    @cached_property
    def suits(self) -> np.ndarray:
        return np.array([c[1] for c in self.cards])

    @cached_property
    def _suit_colours(self) -> dict[str, np.ndarray]:
        return {s: self.colours[self.suits == s].mean(axis=0) for s in set(self.suits)}

    def suit_colour(self, suit: str) -> np.ndarray:
        return self._suit_colours[suit]

    def without(self, card: str) -> Calibration:
        """The same calibration minus one face's samples (for leave-one-out checks)."""
        keep = np.array([c != card for c in self.cards])
        return Calibration(
            cards=tuple(c for c in self.cards if c != card),
            rank_vectors=self.rank_vectors[keep],
            suit_vectors=self.suit_vectors[keep],
            rank_boxes=self.rank_boxes[keep],
            suit_boxes=self.suit_boxes[keep],
            colours=self.colours[keep],
            aspect=self.aspect,
        )

    def save(self, path: Path) -> None:
        """Write the calibration atomically (a temporary file renamed into place)."""
        meta = {"format": FORMAT, "version": VERSION, "glyph": GLYPH, "aspect": self.aspect}
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            meta=np.array(json.dumps(meta)),
            cards=np.array(self.cards),
            rank_vectors=self.rank_vectors,
            suit_vectors=self.suit_vectors,
            rank_boxes=self.rank_boxes,
            suit_boxes=self.suit_boxes,
            colours=self.colours,
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
                if meta.get("version") != VERSION or meta.get("glyph") != GLYPH:
                    raise CalibrationError(f"{path}: unsupported calibration version")
                cal = cls(
                    cards=tuple(str(c) for c in data["cards"]),
                    rank_vectors=data["rank_vectors"].astype(np.float32),
                    suit_vectors=data["suit_vectors"].astype(np.float32),
                    rank_boxes=data["rank_boxes"].astype(np.float32),
                    suit_boxes=data["suit_boxes"].astype(np.float32),
                    colours=data["colours"].astype(np.float32),
                    aspect=float(meta["aspect"]),
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


def measure_face(image: np.ndarray, locator: Locator) -> tuple[list[CornerIndex], float]:
    """The readable corner indices of the one card in a calibration photograph, and its aspect."""
    outline = locator.find(image)
    if outline.quad is None:
        raise NoIndex(f"no whole card found ({outline.why})")
    q = outline.quad
    short = (np.linalg.norm(q[1] - q[0]) + np.linalg.norm(q[2] - q[3])) / 2
    long_ = (np.linalg.norm(q[3] - q[0]) + np.linalg.norm(q[2] - q[1])) / 2
    card = straighten(image, q)
    found: list[CornerIndex] = []
    reasons: list[str] = []
    for corner in corners(card):
        try:
            found.append(read_corner(corner))
        except NoIndex as exc:
            reasons.append(exc.reason)
    if not found:
        raise NoIndex("; ".join(reasons))
    return found, float(short / long_)


def build(samples: dict[str, list[CornerIndex]], aspect: float) -> Calibration:
    cards = [code for code, idx in samples.items() for _ in idx]
    flat = [i for idx in samples.values() for i in idx]
    return Calibration(
        cards=tuple(cards),
        rank_vectors=np.array([i.rank.vector for i in flat], np.float32),
        suit_vectors=np.array([i.suit.vector for i in flat], np.float32),
        rank_boxes=np.array([i.rank.box for i in flat], np.float32),
        suit_boxes=np.array([i.suit.box for i in flat], np.float32),
        colours=np.array([i.colour for i in flat], np.float32),
        aspect=aspect,
    )


def calibrate(folder: Path, allow_missing: bool = False) -> tuple[Calibration, list[FaceProblem]]:
    """Learn a deck from ``folder`` (one photograph per face, named ``AS.png`` …).

    Returns the calibration and every face that could not be used, with why.
    Refuses (:class:`CalibrationError`) when a face is unusable, unless
    ``allow_missing`` and every rank and every suit still has a sample.
    """
    from shoe_reader.camera.recognize import check_face  # avoid an import cycle

    if not folder.is_dir():
        raise CalibrationError(f"{folder} is not a folder")
    files, problems = _face_files(folder)
    locator = Locator(aspect_tolerance=0.2)
    samples: dict[str, list[CornerIndex]] = {}
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
    # the wrong name (AH.png showing the ace of spades) would teach a misread.
    for code in list(samples):
        reason = check_face(cal.without(code), code, samples[code])
        if reason:
            problems.append(FaceProblem(code, files[code].name, reason))
            del samples[code]
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
