"""Calibration: the studio's own deck, photographed once, one face per file.

Every deck prints its faces in its own font, size, colours and layout, so the
recognizer learns them from photographs of the deck it will read rather than
from built-in templates. Every face is kept whole, both ways up and as a softer
lens would show it (see :mod:`shoe_reader.camera.face_match`): that is what a
frame is read against. Both corner windows of every face are kept too: from
them the calibration learns where this deck's rank and suit differ (see
:mod:`shoe_reader.camera.index`), which tells a photograph filed under the
wrong name. The card's proportions go to the locator, and the width of a
printed outline at the card's edge (which a dark table hides) to the reader.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import cv2
import numpy as np
import structlog

from shoe_reader.camera.face_match import FACE_H, FACE_W, FaceBook, face_features
from shoe_reader.camera.index import (
    FEAT_H,
    FEAT_W,
    NoIndex,
    Part,
    blurred_templates,
    corners_of,
    features,
    learn_part,
    similarities,
)
from shoe_reader.camera.locate import Locator, outline_width, snap_to_outline, straighten
from shoe_reader.camera.twin_print import TwinPrint, ink
from shoe_reader.camera.twin_print import learn as learn_twin
from table_service.rules.cards import RANKS, SUITS, CardError, parse_card

log = structlog.get_logger(__name__)

FORMAT = "livetable-camera-calibration"
VERSION = 4
SOFTER = (1.0,)
"""Blur (straightened-card pixels) of the extra, softer copies of each calibration corner."""
FACE_SOFTER = (0.0, 2.0)  # as many as face_match.SOFTER_COPIES, sharp first
"""Blur (straightened-card pixels) of the copies of each whole face (0: the photograph)."""
OUTLINE_INK = 0.45
"""Ink (relative to paper) of a printed outline at the card's edge."""
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

    cards: tuple[str, ...]  # the card of each corner sample
    maps: np.ndarray  # (n, FEAT_H, FEAT_W, 3) float32
    aspect: float  # card width / height as photographed
    soft: np.ndarray  # (n,) bool: a softened copy, not the photograph itself
    face_cards: tuple[str, ...]  # the card of each whole-face sample
    face_maps: np.ndarray  # (m, FACE_H, FACE_W, 3) float32
    outline: float  # width of a printed outline at the card's edge, straightened pixels
    mirrored: bool = False  # the index is printed top right and bottom left (see corners_of)
    inks: np.ndarray | None = None
    """(k, CORNER_H, CORNER_W) float32: the ink of each photograph's corner windows at full
    resolution (see :func:`~shoe_reader.camera.twin_print.ink`), for :meth:`twin_print`;
    ``None`` in a calibration saved before it was kept."""
    ink_cards: tuple[str, ...] = ()  # the card of each of ``inks``
    other_end: np.ndarray | None = None
    """A deck that prints its index at one end only (see :func:`index_positions`): the
    feature maps of its calibration corners at the other end, (j, FEAT_H, FEAT_W, 3), which
    :attr:`end_part` tells from the index's; ``None``: the index is printed at both ends."""

    @cached_property
    def end_part(self) -> Part | None:
        """Where a corner at the end with the index differs from one at the other end (see
        :attr:`other_end`), learned from the calibration's corners at both ends."""
        if self.other_end is None:
            return None
        maps = np.concatenate([self.maps, self.other_end])
        ends = np.array(["index"] * len(self.maps) + ["other"] * len(self.other_end))
        return learn_part(maps, ends)

    def shows_index(self, fmap: np.ndarray) -> bool:
        """Whether a frame's corner window (feature map) may show this deck's index: always,
        where the deck prints it at both ends; else only if it is nearer the calibration's
        corners at the end with the index than any at the other end (a card comes out of the
        shoe either way up: of a frame's two corners, the one at the end without the index is
        left out, as a blank one is)."""
        part = self.end_part
        if part is None:
            return True
        return str(part.labels[int(np.argmax(similarities(part, fmap)))]) == "index"

    @cached_property
    def book(self) -> FaceBook:
        return FaceBook.learn(self.face_cards, self.face_maps)

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

    @cached_property
    def index_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """Where the rank and the suit are told apart in a corner's features: each part's
        weights summed over the features of a pixel, (FEAT_H, FEAT_W), adding up to 1."""
        out = []
        for part in (self.rank_part, self.suit_part):
            y0, y1, x0, x1 = part.box
            w = np.zeros((FEAT_H, FEAT_W), np.float32)
            w[y0:y1, x0:x1] = (part.root_weights**2).sum(axis=-1)
            out.append(w / max(float(w.sum()), 1e-9))
        return out[0], out[1]

    @cached_property
    def _samples(self) -> dict[str, np.ndarray]:
        cards = np.array(self.cards)
        masks = {code: cards == code for code in set(self.cards)}
        for mask in masks.values():
            mask.flags.writeable = False
        return masks

    def samples_of(self, code: str) -> np.ndarray:
        """Which corner samples are of ``code`` (a mask over :attr:`cards`), made once per
        card: the reader asks on every frame."""
        found = self._samples.get(code)
        return found if found is not None else np.zeros(len(self.cards), bool)

    @cached_property
    def _index_templates(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {}

    def index_templates(self, code: str) -> tuple[np.ndarray, np.ndarray]:
        """``code``'s own rank and suit templates: its calibration samples, and its sharp
        corners smeared as a moving card's (see :func:`blurred_templates`); made once per
        card (:class:`~shoe_reader.camera.recognize.Recognizer` makes them all at the start)."""
        cache = self._index_templates
        found = cache.get(code)
        if found is None:
            mine = self.samples_of(code)
            sharp = self.maps[mine & ~self.soft]
            rank, suit = (
                np.concatenate([part.templates[mine], blurred_templates(part, sharp)])
                for part in (self.rank_part, self.suit_part)
            )
            found = cache[code] = (rank, suit)
        return found

    @cached_property
    def _among(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return {}

    def among(self, code: str, rank: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The samples of ``code``'s suit in the rank part (``rank``), or of its rank in the
        suit part: their templates, labels and pair similarities, made once per suit and rank
        (a frame asks about one card)."""
        key = ("r" + code[1]) if rank else ("s" + code[0])
        found = self._among.get(key)
        if found is None:
            part = self.rank_part if rank else self.suit_part
            pick = self.suits == code[1] if rank else self.ranks == code[0]
            found = (
                np.ascontiguousarray(part.templates[pick]),
                part.labels[pick],
                np.ascontiguousarray(part.pairs[np.ix_(pick, pick)])
                if part.pairs is not None
                else np.zeros((0, 0), np.float32),
            )
            self._among[key] = found
        return found

    @cached_property
    def _pair_parts(self) -> dict[tuple[str, str], Part | None]:
        return {}

    def pair_part(self, a: str, b: str) -> Part | None:
        """Where in the corner the two cards ``a`` and ``b`` differ (``None``: nowhere).

        Learned from those two cards' corners alone, when first asked for (a
        deck has 1,326 pairs; a frame asks about one or two).
        """
        key = (a, b) if a < b else (b, a)
        cache = self._pair_parts
        if key not in cache:
            cards = np.array(self.cards)
            pick = np.isin(cards, key)
            try:
                cache[key] = learn_part(self.maps[pick], cards[pick])
            except NoIndex:
                cache[key] = None
        return cache[key]

    @cached_property
    def _twin_prints(self) -> dict[tuple[str, str], TwinPrint | None]:
        return {}

    def twin_print(self, a: str, b: str) -> TwinPrint | None:
        """The two cards' corner prints smeared every way a moving card's are (see
        :mod:`~shoe_reader.camera.twin_print`), learned from the first photograph corner of
        each, the cards in sorted order (``a < b``); ``None`` where they share no rank print
        above a suit symbol or the calibration kept no full-resolution corner."""
        key = (a, b) if a < b else (b, a)
        cache = self._twin_prints
        if key not in cache:
            found = None
            if self.inks is not None and all(c in self.ink_cards for c in key):
                first = [self.inks[self.ink_cards.index(c)] for c in key]
                found = learn_twin(first[0], first[1])
            cache[key] = found
        return cache[key]

    @cached_property
    def _pair_likeness(self) -> dict[tuple[str, str], float]:
        return {}

    def pair_likeness(self, a: str, b: str) -> float | None:
        """How alike the calibration's corners of ``a`` and ``b`` are where their pair part
        looks (see :meth:`pair_part`): the cosine of the most alike sample of each, worked out
        once per pair (a frame's corner asks it of each contender it is told from: the same
        comparisons of the samples' labels every frame were a fiftieth of a followed card's
        read); ``None`` where the two have no pair part."""
        part = self.pair_part(a, b)
        if part is None or part.pairs is None:
            return None
        cache = self._pair_likeness
        found = cache.get((a, b))
        if found is None:
            ia, ib = part.labels == a, part.labels == b
            found = cache[a, b] = float(part.pairs[np.ix_(ia, ib)].max())
        return found

    @cached_property
    def _pair_smears(self) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        return {}

    def pair_smeared(self, a: str, b: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The pair part of ``a`` and ``b`` (see :meth:`pair_part`) for their sharp corners
        smeared as a moving card's (see :func:`blurred_templates`): templates and labels.

        A card dealt fast smears its small suit symbol along its travel: a diamond
        smeared along the card has been seen nearer a sharp heart's template than a
        sharp diamond's on the print that tells the two apart. Each of the two cards
        is judged at its most alike, smeared or not.
        """
        part = self.pair_part(a, b)
        if part is None:
            return None
        key = (a, b) if a < b else (b, a)
        cache = self._pair_smears
        if key not in cache:
            cards = np.array(self.cards)
            templates, labels = [], []
            for code in key:
                sharp = self.maps[(cards == code) & ~self.soft]
                smeared = blurred_templates(part, sharp)
                templates.append(smeared)
                labels += [code] * len(smeared)
            cache[key] = (np.concatenate(templates), np.array(labels))
        return cache[key]

    def save(self, path: Path) -> None:
        """Write the calibration atomically (a temporary file renamed into place)."""
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "feat": [FEAT_H, FEAT_W],
            "face": [FACE_H, FACE_W],
            "aspect": self.aspect,
            "outline": self.outline,
            "mirrored": self.mirrored,
        }
        buf = io.BytesIO()
        arrays = {
            "meta": np.array(json.dumps(meta)),
            "cards": np.array(self.cards),
            "maps": self.maps.astype(np.float16),
            "soft": self.soft,
            "face_cards": np.array(self.face_cards),
            "face_maps": self.face_maps.astype(np.float16),
        }
        if self.other_end is not None:
            arrays["other_end"] = self.other_end.astype(np.float16)
        if self.inks is not None:
            arrays["inks"] = self.inks.astype(np.float16)
            arrays["ink_cards"] = np.array(self.ink_cards)
        np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
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
                if (
                    meta.get("version") != VERSION
                    or meta.get("feat") != [FEAT_H, FEAT_W]
                    or meta.get("face") != [FACE_H, FACE_W]
                ):
                    raise CalibrationError(f"{path}: unsupported calibration version")
                cal = cls(
                    cards=tuple(str(c) for c in data["cards"]),
                    maps=data["maps"].astype(np.float32),
                    aspect=float(meta["aspect"]),
                    soft=data["soft"].astype(bool),
                    face_cards=tuple(str(c) for c in data["face_cards"]),
                    face_maps=data["face_maps"].astype(np.float32),
                    outline=float(meta["outline"]),
                    mirrored=bool(meta.get("mirrored", False)),  # files before it: top left
                    other_end=(  # files before it: both ends
                        data["other_end"].astype(np.float32) if "other_end" in data.files else None
                    ),
                    # files before them: no twin prints (see Calibration.twin_print)
                    inks=data["inks"].astype(np.float32) if "inks" in data.files else None,
                    ink_cards=(
                        tuple(str(c) for c in data["ink_cards"])
                        if "ink_cards" in data.files
                        else ()
                    ),
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


@dataclass(frozen=True)
class FaceSample:
    """What one calibration photograph gives.

    The corner windows are kept for both places a deck may print its index:
    top left and bottom right (``corners``), or top right and bottom left
    (``mirrored``). Which one the deck uses is decided over the whole deck
    (see :func:`index_corners`).
    """

    corners: list[np.ndarray]  # corner feature maps, sharp ones first
    faces: list[np.ndarray]  # whole-face feature maps (both ways up, sharp and soft)
    aspect: float
    outline: float
    mirrored: list[np.ndarray]  # the same as ``corners``, from the other two corners
    blank: tuple[bool, bool]  # no print in either corner window: (top left, top right)
    inks: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    """The sharp corner windows' ink at full resolution (see Calibration.inks), usual and
    mirrored."""

    def corners_at(self, mirrored: bool) -> list[np.ndarray]:
        return self.mirrored if mirrored else self.corners


def _outline_width(card: np.ndarray) -> float:
    """How many pixels in from the edge a straightened card is printed dark all round.

    Measured along the middle of each side; a card with a plain paper edge gives 0.
    """
    gray = cv2.cvtColor(card, cv2.COLOR_BGR2GRAY).astype(np.float32)
    paper = float(np.percentile(gray, 90))
    h, w = gray.shape
    sides = [
        gray[:16, w // 5 : 4 * w // 5].mean(axis=1),
        gray[::-1][:16, w // 5 : 4 * w // 5].mean(axis=1),
        gray[h // 5 : 4 * h // 5, :16].mean(axis=0),
        gray[h // 5 : 4 * h // 5, ::-1][:, :16].mean(axis=0),
    ]
    widths = []
    for profile in sides:
        ink = 1.0 - profile / max(paper, 1.0)
        dark = ink[1:] > OUTLINE_INK  # the very first pixel may be table
        widths.append(float(np.argmin(dark)) + 1.0 if dark[0] and not dark.all() else 0.0)
    return float(np.median(widths))


def measure_face(image: np.ndarray, locator: Locator) -> FaceSample:
    """Feature maps of the one card in a photograph: its corners, its whole face, its shape."""
    outline = locator.find(image)
    if outline.quad is None:
        raise NoIndex(f"no whole card found ({outline.why})")
    q = outline.quad
    short = (np.linalg.norm(q[1] - q[0]) + np.linalg.norm(q[2] - q[3])) / 2
    long_ = (np.linalg.norm(q[3] - q[0]) + np.linalg.norm(q[2] - q[1])) / 2
    card = straighten(image, q)
    # The mat beside a photographed card is shadowed on one side: there the
    # locator may take a printed outline's inner edge for the card's. Only a
    # card dark all round its edge is measured: on a plain-edged card the
    # paper, its shadow and the mat beyond look like an outline's two edges.
    width = outline_width(image, q) if _outline_width(card) >= 1.0 else 0.0
    if width >= 1.0:
        q = snap_to_outline(image, q, width)
        card = straighten(image, q)
    # The camera over the shoe sees the deck smaller, moving and less sharp than
    # the calibration photograph: each corner is also learned as a softer lens
    # would show it, so a blurred frame is near its own face's soft copy rather
    # than half-way to a face whose sharp details differ.
    layouts, blank, inks = [], [], []
    for mirrored in (False, True):
        windows = corners_of(card, mirrored)
        sharp = [features(c) for c in windows]
        inks.append([ink(c) for c in windows])
        soft = [features(cv2.GaussianBlur(c, (0, 0), sigma)) for sigma in SOFTER for c in windows]
        layouts.append(sharp + soft)
        # Ink away from the card's edge (a sliver of table may show at the very edge).
        blank.append(max(float((m[2:, 2:, 0] > BLANK_INK).mean()) for m in sharp) < BLANK_SHARE)
    # A card comes out of the shoe either way up: single-headed court figures
    # and odd pips are learned both ways.
    faces = [
        face_features(cv2.GaussianBlur(c, (0, 0), sigma) if sigma else c)
        for c in (card, np.ascontiguousarray(card[::-1, ::-1]))
        for sigma in FACE_SOFTER
    ]
    return FaceSample(
        layouts[0],
        faces,
        float(short / long_),
        width,
        layouts[1],
        (blank[0], blank[1]),
        (inks[0], inks[1]),
    )


BLANK_CORNER = "corner is blank: no index printed in either corner"


def index_corners(samples: dict[str, FaceSample]) -> bool:
    """Whether the deck prints its index top right and bottom left (``True``) rather than
    top left and bottom right.

    The index is in the corners that are never blank: a deck's two of hearts
    has nothing printed in the corners without an index. On a tie (an index
    in all four corners, or print everywhere) the corners whose print tells the
    rank better (see :func:`_rank_read`) if either tells it clearly (``END_TELLS``),
    else the usual top left.
    """
    usual = sum(s.blank[0] for s in samples.values())
    other = sum(s.blank[1] for s in samples.values())
    if other != usual or not SINGLE_ENDED:
        return other < usual
    # No corner blank (a frame line, a background or ornament printed in every corner, as on
    # the svg-oxygen decks; or an index in all four): the index is where the rank is told.
    told = {m: max(_rank_read(samples, m, p) for p in (0, 1)) for m in (False, True)}
    return told[True] >= END_TELLS and told[True] > told[False]


SINGLE_ENDED = True
"""A deck whose two index corners are not a copy of each other turned (see
:func:`index_positions`) keeps the corner its rank is printed in only; off, both, as
before."""
COPIES = 0.6
"""Share of the cards whose corner at one end is read as its rank by the other end's prints
(see :func:`_ends_alike`) below which the deck prints its index at one end only. Measured on
the calibration photographs (seed 2024 + the deck's place): decks printing the index at both
ends, every development deck and twelve of the check decks, 0.85-1.00 (guyenne-classic 0.85,
svg-jolly-royal 0.94); tango_nuevo (the rank top left, the suit top right, the big pip's tail
in the bottom corners) 0.08, the svg-oxygen decks (the rank top right, a small suit or an
ornament bottom left) 0.21-0.38."""


END_TELLS = 0.5
"""Share of the number cards whose corner at one end is read as its rank by the other suits'
prints there (see :func:`_rank_read`) from which that end is taken for an index even where
it is not a turned copy of the other: svg-ancient-egyptians prints its second index upright
at the bottom right (0.70 there, 0.82 at the top), and both its ends are read, as before.
Measured on the calibration photographs: the ends of the development decks 0.62-1.00; the
end without the index of tango_nuevo 0.00 (its pip's tail). A deck neither of whose ends
reads ``INDEX_TELLS`` is refused."""


def _corners(
    samples: dict[str, FaceSample], mirrored: bool, positions: tuple[int, ...]
) -> list[tuple[str, bool, np.ndarray]]:
    """Each card's calibration corners at ``positions`` (0: the top one, 1: the bottom one
    turned), sharp first (the top and bottom corner, then their softer copies): the card,
    whether it is a softer copy, its feature map."""
    return [
        (code, i >= 2, m)
        for code, s in samples.items()
        for i, m in enumerate(s.corners_at(mirrored))
        if i % 2 in positions
    ]


def _end(
    samples: dict[str, FaceSample], mirrored: bool, position: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The calibration corners at one end (0: the top one, 1: the bottom one turned): their
    feature maps, cards and whether each is a softer copy."""
    picked = _corners(samples, mirrored, (position,))
    return (
        np.array([m for _c, _soft, m in picked], np.float32),
        np.array([c for c, _soft, _m in picked]),
        np.array([soft for _c, soft, _m in picked], bool),
    )


def _ends_alike(samples: dict[str, FaceSample], mirrored: bool) -> float:
    """How much a card's two index corners are one print turned: the share of the cards whose
    sharp corner at one end is read as its rank by the prints of the other end's corners
    alone (the better of the two ways). A rank part allows the index a feature pixel off
    and weighs the print that tells ranks apart, where a pixel-wise likeness of the two
    corners was swayed by a gradient across the card or an index set a few pixels further in
    at one end (svg-jolly-royal)."""
    told = 0.0
    for one, other in ((0, 1), (1, 0)):
        maps, cards, _soft = _end(samples, mirrored, one)
        try:
            part = learn_part(maps, np.array([c[0] for c in cards]))
        except NoIndex:
            continue
        there, where, soft = _end(samples, mirrored, other)
        right = [
            str(part.labels[int(np.argmax(similarities(part, m)))]) == c[0]
            for m, c in zip(there[~soft], where[~soft], strict=True)
        ]
        told = max(told, float(np.mean(right)) if right else 0.0)
    return told


def _rank_read(samples: dict[str, FaceSample], mirrored: bool, position: int) -> float:
    """How well one index corner (0: the top one, 1: the bottom one turned) tells the rank of a
    number card: the share of the number cards whose corner there is read as its rank by the
    other suits' prints of that corner alone (a rank printed there reads as the same rank of
    another suit, turned or not; a pip's tail, a suit symbol or an ornament printed alike for
    every rank of a suit does not). Court cards are left out: their figures reach into the
    corner, other in each suit."""
    maps, cards, soft = _end(samples, mirrored, position)
    numbers = np.array([c[0] not in "JQK" for c in cards], bool)
    maps, cards, soft = maps[numbers], cards[numbers], soft[numbers]
    ranks = np.array([c[0] for c in cards])
    try:
        part = learn_part(maps, ranks)
    except NoIndex:
        return 0.0  # (every rank alike there)
    right = 0
    sharp = np.flatnonzero(~soft)
    for j in sharp:
        found = np.where(cards == cards[j], -np.inf, similarities(part, maps[j]))
        right += part.labels[int(np.argmax(found))] == ranks[j]
    return right / max(len(sharp), 1)


def index_positions(samples: dict[str, FaceSample], mirrored: bool) -> tuple[int, ...]:
    """Which of a card's two index corners (0: the top one, 1: the bottom one, turned) the
    calibration keeps: both, where the deck prints its index at both ends; else the one that
    tells the rank (see :func:`_rank_read`; the top one if neither tells it better); both
    again where each end tells the rank on its own (see ``END_TELLS``).

    Most decks print the index twice, the second a copy turned half round, and a frame's two
    corners are each compared with both. A deck that prints it once (tango_nuevo: the rank top
    left, the suit top right, the big pip's tail in the bottom corners) has a bottom corner
    alike for every rank of a suit: learned as the card's index, it taught the rank part a
    spread within each rank as large as the print that tells ranks apart, and in a frame that
    corner read a rank at random, against the other corner (every tango_nuevo frame "corners
    disagree" or a dispute).
    Kept to the corner the rank is printed in, a frame's corner that shows the other end fits
    no rank well and says nothing (a card comes out of the shoe either way up: both of a
    frame's corners are still compared).

    Refuses (:class:`CalibrationError`, ``NO_CORNER_INDEX``) a deck whose ends are not one
    print turned where neither end tells the rank (see ``INDEX_TELLS``): the svg-oxygen decks,
    the rank alone top right, thin on a dark or coloured ground, a small suit bottom left,
    artwork or a frame line in the other corners.
    """
    if not SINGLE_ENDED or _ends_alike(samples, mirrored) >= COPIES:
        return (0, 1)
    top, bottom = (_rank_read(samples, mirrored, p) for p in (0, 1))
    if max(top, bottom) < INDEX_TELLS:
        raise CalibrationError(NO_CORNER_INDEX.format(top=top, bottom=bottom, need=INDEX_TELLS))
    if min(top, bottom) >= END_TELLS:
        return (0, 1)  # an index at each end, the second not turned (read both, as before)
    return (1,) if bottom > top else (0,)


INDEX_TELLS = 0.6
"""Share of the number cards an end must read as their rank (see :func:`_rank_read`) for a
deck whose two ends are not one print turned to have a corner index at all (else refused,
``NO_CORNER_INDEX``). Measured on the calibration photographs of seeds 1-20, 23, 100, 500
and 2024 (+ the deck's place): the svg-oxygen decks at most 0.53 where the rank is printed, a
thin glyph on a dark or coloured ground (svg-oxygen at seed 19; 0.40-0.50 at the other
seeds), 0.03-0.33 in the corners without it (a small suit symbol, an ornament or a frame
line); the decks read at least 0.72 at their better end (svg-ancient-egyptians 0.72-0.85,
tango_nuevo 1.00); every development deck's ends are one print turned (``COPIES``) and do
not come here (svg-xskat-french, the lowest, 0.50-0.65 at each end, seeds 7, 11, 23, 100,
500 and 2024).

Calibrated on both ends as the blank rule finds them, as they were before this limit,
svg-oxygen's corners held the scattered sparkles of its artwork, which differ from card to
card: the reader took them for an index, and in the studio frames of the check decks (seed
2024, 40 passes) they spoke for the two of clubs, a sparkle a few pixels off, in every frame
of a pass that showed the two of spades, the faces of the two all but alike: a pass reported
as the wrong card."""


NO_CORNER_INDEX = (
    "no corner index: neither end's corners tell a number card's rank (at the top "
    "{top:.0%}, at the bottom {bottom:.0%} of the number cards read as their rank by the other "
    "suits' prints there, {need:.0%} needed), and the two ends are not one print turned; the "
    "camera reads a card by the index printed in its corners (the rank, with its suit beside "
    "it or on the face), and these corners hold artwork, a frame line or a rank too faint on "
    "its ground"
)
"""Why a deck with no corner index the reader can use is refused (see ``INDEX_TELLS``)."""


def build(
    samples: dict[str, FaceSample],
    aspect: float,
    outline: float,
    mirrored: bool = False,
    positions: tuple[int, ...] = (0, 1),
) -> Calibration:
    """The calibration of ``samples``, their corners at ``positions`` only (see
    :func:`index_positions`)."""
    kept = _corners(samples, mirrored, positions)
    inks = [
        (code, k)
        for code, s in samples.items()
        for i, k in enumerate(s.inks[mirrored])
        if i % 2 in positions
    ]
    cal = Calibration(
        cards=tuple(c for c, _soft, _m in kept),
        maps=np.array([m for _c, _soft, m in kept], np.float32),
        aspect=aspect,
        soft=np.array([soft for _c, soft, _m in kept]),
        face_cards=tuple(code for code, s in samples.items() for _ in s.faces),
        face_maps=np.array([m for s in samples.values() for m in s.faces], np.float32),
        outline=outline,
        mirrored=mirrored,
        inks=np.array([k for _c, k in inks], np.float32),
        ink_cards=tuple(c for c, _k in inks),
    )
    if len(positions) == 2:
        return cal
    other = _corners(samples, mirrored, tuple(p for p in (0, 1) if p not in positions))
    return replace(cal, other_end=np.array([m for _c, _soft, m in other], np.float32))
