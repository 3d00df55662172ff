"""Reading one frame: the card against the calibrated deck's faces, with a confidence.

The straightened card is compared whole with every calibrated face (see
:mod:`shoe_reader.camera.face_match`). A read is confident only when the
frame matches its best face well *and* lies clearly nearer it than any face
of another card. A card from another deck, a blank, a joker, a card half
covered or a quad that missed the card matches nothing well and is rejected
rather than forced onto the nearest face.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial

import cv2
import numpy as np
from threadpoolctl import threadpool_limits

from shoe_reader.camera import kernels
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.face_match import FACE_H, FACE_W, FaceBook, FaceMatch, face_features
from shoe_reader.camera.index import (
    FEAT_H,
    FEAT_W,
    NoIndex,
    Part,
    best_cosines,
    features,
    nudged,
    pair_similarities,
    similarities,
    similarities_with,
    uncovered,
    unit_shifted,
)
from shoe_reader.camera.locate import (
    AROUND,
    AT_EDGE,
    Locator,
    Outline,
    border,
    grown,
    side_lengths,
    skin_pixels,
    snap_to_outline,
    straighten_corner,
    straighten_small,
)
from shoe_reader.camera.roi import RoiError
from shoe_reader.camera.twin_print import SEARCH, TwinPrint, ink
from shoe_reader.camera.twin_print import separation as twin_separation
from shoe_reader.events import BLURRED, COVERED, OUTSIDE, UNKNOWN
from table_service.rules.cards import SUITS

# A read's confidence is the product of two measures, each from 0 to 1.
# Fit: the cosine with the best face; the right face seen through blur,
# noise, compression and a fingertip is above FIT_OK, another deck, a blank
# or a quad that missed the card below FIT_MIN. Separation (see
# face_match.FaceMatch): below SEP_MIN no confidence, from SEP_FULL full
# confidence. Measured on the development decks at the "moderate" level, a
# wrong face never came nearer than fit 0.58 or separation 0.14.
FIT_MIN = 0.6
FIT_OK = 0.8
SEP_MIN = 0.25
SEP_FULL = 0.5
INDEX_MIN = 0.95
INDEX_OK = 0.975
"""Fit of the corner index with the read face's own below which (up to which) a read loses
confidence: the same face from another deck has other print in its corner."""
PART_LIMITS = (0.75, 0.9, 0.5, 0.9)
"""The same limits for one corner's suit, read to tell a misnamed photograph."""
WEAK = 0.5
"""Below this a read carries the reason it is weak (the voting does not count it)."""
LONE_CORNER = 0.45
"""Confidence kept by a read from one corner when the other could not be read."""
SEPARATE = 0.995
"""Faces of different cards alike beyond this cosine are not told apart by the face..."""
ALIKE = 0.98
"""Faces of two cards this alike differ only in small print (tango's and simplistic's kings of
spades and clubs: one figure, other suit symbols; measured on the development decks, no other
pair of faces above 0.976): between them the face has no say, and the index reads the card."""
COVERED_NO_SAY = 0.1
"""A face under a hand that prefers its best card to another by less than this share (see
:meth:`~shoe_reader.camera.face_match.FaceBook.shares`; no confidence below ``SEP_MIN``) has no
say between the two either: an eight of spades and of clubs with a finger over the pips that
differ (measured: shares of 0.015-0.05 against the card both corners read)."""
INDEX_APART = 0.975
"""...nor by the index, if their corners are alike beyond this (where the two cards differ)."""
PAIR_OK = 0.35
"""Separation on the corner index (see :func:`_pair_separation`) that settles two faces the
whole face cannot tell apart; measured on the development decks at the "moderate" level the
right card's was never below 0.24 (one frame in 800) and mostly about 1."""
DISPUTED = "face and index disagree"
PAIR_FIT = 0.8
"""A corner that looks this little like either of the two cards has no say (a fingertip)."""
PAIR_CONTENDERS = 6
"""More faces than this near the best one: the frame is not clear enough to settle."""
RANK_ALONE = (0.84, 0.92, 0.3, 0.55)
SUIT_ALONE = (0.84, 0.92, 0.3, 0.55)
"""Limits (fit, separation) of a corner's rank and suit read without the face (see
:func:`_read_index`). Measured on the development decks at the "studio" level, through
blur, glare and fingers: a wrong rank never fitted above 0.84 nor came clearer than 0.28, a
wrong suit never clearer than 0.15; the right ones' tenth percentiles were fit 0.90 and
separation 0.34."""
_SKIN_REACH = np.ones((5, 5), np.uint8)
"""How far round skin a straightened face (at twice the feature size) is taken as covered:
the finger's soft edge and shadow."""
_FINGER = np.ones((9, 9), np.uint8)
"""Skin in a corner window (straightened pixels) narrower than this is print, not a finger: red
or orange ink, a court figure's face, blurred and compressed, has skin's hue in thin strokes."""
COVERED_INDEX = 0.1
"""Share of a corner's index (its rank's or its suit's weights, see
:attr:`~shoe_reader.camera.calibration.Calibration.index_weights`) under a finger from which the
corner is not read at all: the part of the index left shows another card as often as its own
(a three of spades' suit cut to a club's lobe, a six's to an eight's, a rank cut to a court's
letter), and a hand that covers one corner leaves the other whole. Measured on the development
decks at the "studio" level: red print alone 0.00-0.05 before the opening (see ``_FINGER``), a
fingertip over the suit 0.1-0.6."""
COVERED_INDEX_MASKED = 0.5
"""Up to this share (see ``COVERED_INDEX``) a corner with a finger in its window is still
read, compared only where no skin lies (see :class:`~shoe_reader.camera.index.Uncovered`):
the weights reach past the printed index (a higher card's pips, a court figure reach into
the window), and a finger beside the index, not over it, left a clear index out of the
read (neoclassical's five of diamonds, pass 161). Measured on the development decks at the
"studio" level (seed 2024, 2,800 passes, frame by frame): see docs/operations/camera.md."""
SKIN_NEVER_INK = True
"""A corner with a finger in its window (skin left once thin print is opened away, see
``_FINGER``) is compared only where no skin lies (see
:class:`~shoe_reader.camera.index.Uncovered`), however little of its index's weights the
finger lies over; off, only above ``COVERED_INDEX``, as before. Skin is never ink: compared
as ink it lowers the corner's fit with every card alike, its own print's too, and where the
rank's weights reach past the printed index (a higher card's pips, a court figure) a
fingertip over a few per cent of them has held a clear index below this deck's print:
anglo_modern's two of clubs (seed 7, pass 16, a fingertip low in the top corner's window,
3-5 % of the rank's weights) fitted its own print at 0.78-0.81 in every frame while the rank
read a two by a margin of 0.4, and no frame was read; left out, 0.95-0.98, seven frames read
2C. Its six of hearts (seed 2024, pass 121, a finger beside the top index and a fingertip in
the bottom corner's window, 3-8 %): the top corner's rank fitted 0.96-0.98, one frame was
read; left out, 0.97-0.99, three frames read 6H (the bottom corner, no skin in it, still reads
an eight in three frames smeared along the card, which the vote weighs). Leaving skin out
raises a foreign print's fit no more than the deck's own: anglo's frames against
anglo_modern's prints (and the other way round, 40 passes, the drawn outline) fitted the same
at the 90th and 99th percentiles either way."""
_SKIN_REACH_FEAT = np.ones((3, 3), np.uint8)
_ALL_SEEN = np.ones((FEAT_H, FEAT_W), np.float32)
COVERED_SKIN = 0.03
"""Share of a straightened card in skin colours (see :func:`skin_pixels`) from which a card
not read is said to be covered."""
SHARP = 0.9
"""Face fit above which a frame is sharp: an index that does not fit this deck's there is
another deck's."""
ONE_CORNER_FACE = 0.1
"""The face's separation (see :class:`~shoe_reader.camera.face_match.FaceMatch`) with which
it must prefer a card only one corner reads."""
CONTRARY = (0.75, 0.3)
"""Fit and separation with which a corner's rank or suit, too poor to be read, still speaks
against a card read where the face is in doubt (see :func:`_index_settles`)."""
CONTRARY_RANK = (0.9, 0.3)
"""Fit and separation with which a corner's rank, among the ranks of the suit the face reads,
speaks against a face read whose index fits only nearly (see :func:`_contrary`). Measured on
the development decks at the "studio" level: a five or a nine whose middle pip a glare spot
washed out, read a four by the face, fitted its own rank at 0.95-0.98 with separation
0.35-0.62; corners that said a court or an ace of a clearly read three or nine, their print a
pixel off (svg-jolly-royal's thin rim), fitted it at most 0.77."""
ONE_CORNER_CONTENDERS = 16
"""More cards than this that a covered face cannot tell from the one a lone corner reads: the
corner does not settle it (see :func:`_index_settles`)."""
INDEX_FLOOR = 0.9
"""A card read by its index alone: its index must fit this deck's print of it this well, and
as well as the face fits (another deck's index on a face like this deck's fits less)."""
AGAINST_FACE = 0.6
"""Share of an index read's confidence kept where the face, not clear, is nearest another
card."""
CORNERS_DISAGREE = "corners disagree"
FACE_SUIT = 0.6
"""Share (see :meth:`~shoe_reader.camera.face_match.FaceBook.shares`) by which the face's best
card must be preferred to every card of another suit for the face to say its suit
(``CardRead.face_suit``). Measured on the development decks at the "studio" level (seed 2024,
and seed 7 on six of them; every frame whose face fits a card at ``FIT_MIN``): of 16,067
frames whose face preferred its suit by 0.5 or more, none was of another suit; the most a
wrong suit was preferred by was 0.43 (svg-jolly-royal's jack of spades read as the jack of
clubs, a court figure). A corner's suit alone is no such evidence: 1,200 of 36,435 clear
corners (fit 0.84 or more) said a wrong suit, 25 of them by a margin of 0.9 or more."""
BESIDE_AGAIN = True
"""A frame still not read has the sides of its outlines found again beside a hand (see
:meth:`Recognizer._beside_outlines`)."""
OTHER_OUTLINES = 2
"""Outlines read beyond the two the locators chose, on a frame neither read (see
:meth:`Recognizer._other_outlines`). Measured on the development decks at the "studio"
level: the first read ten more passes (of 2,800), the second one more, a third none."""
GROWN_NAMED = True
"""An outline grown by a printed edge's width (see :func:`read_outline`) may not read a card
confidently that the corners of the same outline's reads before it did not name, where they
named any (``CardRead.corners``): the read is not taken, and the outline stays as its reads
before left it. The grown outline is the same outline a pixel or two further out; a read
there naming another card than its corners did is a threshold crossed by those pixels, not
evidence. Seed 13's held-out frames (six decks, 60 passes; nobody tuned on them): three
confident frames read another card on a grown outline, the corners before naming the card
shown (tango's queen of clubs read QS twice, ancient_french's nine of hearts read 8H after a
corner named 6H); not taken, two are gone (the third read QS on the thorough search's outline
as well), and seed 13's wrong frames went 7 -> 1 with the twin prints checked
(``twin_print.SELF_TOLD``; 3 without this). No pass changed at seed 2024 (14 development
decks, 200 passes), seeds 5, 7, 11, 17, 19 (six decks) nor on the check decks; 0-2 frames
read fewer a run. Taken across all of a frame's outlines (the thorough search's, its others,
beside a hand) the rule lost passes: the outlines before named the twin suit as often where
the re-try was right (anglo_modern's 3C and svg-jolly-royal's 8C at seed 2024,
ancient_french's 6C at seed 17)."""
GROWN_DISAGREES = "grown outline disagrees with its corners"
"""Why a grown outline's read is not taken (see ``GROWN_NAMED``)."""
COURTS = frozenset("JQK")
MISCOLOURED = 0.15
"""Suits printed at least this far apart in colour (chroma) tell a misnamed face by its colour."""
MISCOLOURED_CORNERS = 3
"""Faces whose corners are printed in another suit's colour, all one way (red faces showing
black corners, none the other way round), from which the cause is told as the corner, not
misnamed photographs: two photographs swapped show each other's suit, and one misnamed shows
one. svg-oxygen-white prints a black frame line in the corners the calibration compares, and
its red low cards (2D, 2H, 3D, 3H) were refused as "photograph misnamed?" (the deck is now
refused before this check, its corners telling no rank: see
:data:`~shoe_reader.camera.calibration.NO_CORNER_INDEX`)."""
MISNAMED = 0.5
"""A face the rest of the deck reads as another rank or suit this confidently is misnamed."""
TRACK = True
"""The card is looked for first round where the last frame showed it (see
:meth:`Recognizer._tracked`): a card slides through the view over several frames, 3-10 % of
its length a frame, and searching a window round it costs a fraction of the whole region."""
TRACK_REACH = 0.5
"""How far beyond the last frame's card (its box) the window reaches, as a share of the card's
long side: the card's travel to the next frame, and a dealer's hand on it (the studio's
hands reach up to 0.7 of a card's width beyond it), so that its skin joins the card's pieces
as it does in the whole region."""
TRACK_EDGE = 32
"""Pixels (full scale) from the window's edge within which a card found in the window is not
taken (the whole region is searched): a card cut by the window is no card the window can find
whole, and its sides are snapped in crops reaching ``AROUND`` pixels round it."""
TRACK_FOLLOW_EDGE = AROUND
"""Pixels (full scale) from the region's edge within which a followed outline is not looked
for (see :meth:`Recognizer._follow`): its snap crops ``AROUND`` (16) pixels round the
outline and moves a side at most ``TRACK_SNAP`` (12), so an outline this far in is snapped on
a whole crop and stays inside the region. The window's margin (``TRACK_EDGE``, 32) is for
another case, a card cut by a window's side, and made every frame whose card came within
32 px of the region's edge (a card sliding along it or leaving the view) be searched for in
the window (about 5 % of frames at the "studio" level, each about 1.7 times a followed one)."""
TRACK_SNAP = 12.0
"""Pixels the snap may move a followed outline's corners: the reach of its search across a
side (``_SNAP_D``); further, it caught another edge than the card's."""
TRACK_STEP = 0.35
"""Share of the card's long side beyond which a move from one frame's card to the next one's
is no card sliding on (another card, or one found again after frames without it): the next
outline is not followed from it."""
TRACK_SIZE = 32
"""Pixels (full scale, a multiple of the reduction's step) the window's sides are made a
multiple of."""
TRACK_MOST = 0.6
"""Share of the region's area beyond which a window saves too little to be tried."""
TRACK_READ_ON = True
"""Where a frame searched whole was read on another outline than the first one found (the
thorough search's, one of its others, one found beside a hand: see :meth:`Recognizer._search`),
the next frame follows the card from that outline: the one the card was read on."""
TRACK_OUT = (0.06, 0.095)
"""Shares of the card's length by which a pass's second frame is looked for moved along the
card's long side, either way, before the window round its last place (see
:meth:`Recognizer._followed_out`; ``()``: never). A card comes out of the shoe along its
length, 3-10 % of it a frame at the "studio" level (a card 200-280 px long: 6-28 px); the
snap's reach (``TRACK_SNAP``, 12 px) round these two moves covers that. With one frame seen
there is no motion to follow yet, and the second frame of every pass was looked at in the
window (a fifth of all frames, each about twice a followed frame's time); a move that finds
no card there whole costs one snap (about 0.7 ms). The read must be confident and of the card
the first frame read (see :meth:`Recognizer._agrees`), or the window is looked at as before."""
TRACK_CONTESTED = True
"""Once the frames at one place have read two cards confidently, the card there is no longer
followed: each frame of it is searched whole, as it was before tracking (see
:meth:`Recognizer._remember`). A followed read is kept only when it names the card the frame
before read there, so where the frames disagree it would carry one side on and never speak for
the other: tango's ace of spades at seed 13 (pass 48) with its broken twin print kept
(``twin_print.SELF_CHECK`` off), searched whole AS, AC, AC, AC, AS over its confident frames,
unreadable; its last AS frame followed from the AC before it read AC, and the pass was AC.
Leaving followed frames out of the vote where the searched ones disagree (the voter's share
of searched frames alone) lost two passes at seed 19, tango's JC and JS, each with one stray
searched frame of the other jack: searched whole, such passes read as before tracking."""


@dataclass(frozen=True)
class PartRead:
    label: str
    score: float
    margin: float
    confidence: float


@dataclass(frozen=True)
class CardRead:
    """The read of one card in one frame: a code, or none with the reason.

    ``disputed``: the face read one card and its corner index another. No
    other outline of the same frame is tried then: it would only roll the
    dice again between the two cards.
    """

    code: str | None
    confidence: float
    reason: str = ""
    disputed: bool = False
    cause: str = ""
    """Why a card in view was not read (confidently): :data:`~shoe_reader.events.BLURRED`,
    :data:`~shoe_reader.events.COVERED` or :data:`~shoe_reader.events.UNKNOWN`."""
    deck_fit: float = 1.0
    """How well the card's index fits this deck's print of it (see :func:`index_fit`); a pass
    is reported only if one of its frames was sharp enough to show it is (see
    :class:`~shoe_reader.camera.voting.VotingRules`)."""
    face: str = ""
    """A frame not read confidently: the card its face alone reads clearly (where it is not
    covered), if any; evidence the pass weighs with its other frames (see
    :class:`~shoe_reader.camera.voting.VotingRules`), never a read of its own."""
    corners: tuple[str, ...] = ()
    """A frame not read confidently: the cards its corner indices clear enough to look at
    say (rank and suit), however weakly."""
    dispute: tuple[str, str] | tuple[()] = ()
    """A frame ``disputed`` between its face and its index: the card the face reads and the
    card the index reads (see :class:`~shoe_reader.camera.voting.VotingRules`)."""
    index: str = ""
    """A frame not read confidently: the card its corner indices read on their own (rank and
    suit each clearer than a wrong one was measured, see ``RANK_ALONE``), every corner clear
    enough to look at saying it, and the face not ruling it out (see :func:`_read_index`)."""
    face_suit: str = ""
    """A frame not read confidently: the suit of the cards the face cannot tell apart, where
    it tells them from every card of another suit (see ``FACE_SUIT``): a finger over the pips
    that tell a seven of hearts from an eight leaves the hearts' shape and colour."""


@dataclass(frozen=True)
class FrameRead:
    """What one frame showed: whether a card was in view, and the read if it was whole."""

    present: bool
    read: CardRead | None
    why: str = ""

    @property
    def cause(self) -> str:
        """Why a card in view was not read: the read's cause, or (no whole card found)
        :data:`~shoe_reader.events.OUTSIDE` for a card reaching out of the region, else
        :data:`~shoe_reader.events.COVERED` (its outline broken)."""
        if self.read is not None:
            return self.read.cause
        return OUTSIDE if self.why == AT_EDGE else COVERED


def _confidence(
    fit: float, separation: float, limits: tuple[float, float, float, float] | None = None
) -> float:
    fit_min, fit_ok, sep_min, sep_full = limits or (FIT_MIN, FIT_OK, SEP_MIN, SEP_FULL)
    f = _within_one((fit - fit_min) / (fit_ok - fit_min))
    s = _within_one((separation - sep_min) / (sep_full - sep_min))
    return float(f * s)


def _within_one(value: float) -> float:
    """``value`` clipped to 0..1: ``np.clip(value, 0.0, 1.0)`` of a float (a NaN stays one),
    without its dispatch, a dozen times a frame."""
    return min(max(value, 0.0), 1.0)


def _classify(part: Part, fmap: np.ndarray, exclude: np.ndarray | None = None) -> PartRead:
    found = similarities(part, fmap)
    if exclude is not None:
        found = np.where(exclude, -np.inf, found)
    best = int(np.argmax(found))
    label = part.labels[best]
    other = (part.labels != label) & np.isfinite(found)
    if not other.any():
        return PartRead(str(label), float(found[best]), 0.0, 0.0)
    gap = 1.0 - pair_similarities(part)[best, other]
    separation = float(np.min((found[best] - found[other]) / np.maximum(gap, 1e-6)))
    fit = float(found[best])
    return PartRead(str(label), fit, separation, _confidence(fit, separation, PART_LIMITS))


def _pair_separation(cal: Calibration, windows: Iterable[np.ndarray], a: str, b: str) -> float:
    """How clearly the corner index says ``a`` rather than ``b`` (negative: ``b``).

    Learned from the two cards' own corners only (see
    :meth:`Calibration.pair_part`), so it weighs just the print that differs
    between them: a spade's point against a club's lobes, a five's middle pip.
    The corner that looks most like either card speaks; but a corner that
    clearly speaks for ``b`` is a doubt whatever the other says.

    Two cards of one rank in twin suits (see ``TWIN_RANKS``) are told by their
    twin print instead (see :mod:`~shoe_reader.camera.twin_print`), where the
    corners are those of a card (:class:`_Windows`): the suit symbol compared at
    the smear measured on the rank above it; a corner where that cannot be
    measured has no say.
    """
    twin = _twin_print(cal, a, b)
    if twin is not None and isinstance(windows, _Windows | _OneWindow):
        said, best_fit, against = 0.0, -1.0, np.inf
        for i, _fmap in enumerate(windows):
            told = windows.twin(i, twin, a, b)
            if told is None:
                continue
            separation, fit = told
            against = min(against, separation)
            if fit > best_fit:
                said, best_fit = separation, fit
        return against if against <= -PAIR_OK else said
    part = cal.pair_part(a, b)
    if part is None:
        return 0.0
    ia, ib = part.labels == a, part.labels == b
    likeness = cal.pair_likeness(a, b)
    assert likeness is not None  # (a pair part learns its samples' pairs)
    gap = max(1.0 - likeness, 1e-6)
    said, best_fit, against = 0.0, -1.0, np.inf
    smeared = cal.pair_smeared(a, b)
    for fmap in windows:
        unit = unit_shifted(part, fmap)  # the window, once for both sets of templates
        found = best_cosines(part.templates, unit)
        sa, sb = float(found[ia].max()), float(found[ib].max())
        if smeared is not None:
            # Either card smeared as it moves is as much itself (see Calibration.pair_smeared).
            templates, labels = smeared
            moved = best_cosines(templates, unit)
            sa = max(sa, float(moved[labels == a].max()))
            sb = max(sb, float(moved[labels == b].max()))
        fit = max(sa, sb)
        if fit < PAIR_FIT:
            continue
        separation = (sa - sb) / gap
        against = min(against, separation)
        if fit > best_fit:
            said, best_fit = separation, fit
    return against if against <= -PAIR_OK else said


TWIN_RANKS = frozenset("A23")
"""Ranks whose two cards in twin suits are told apart by their twin print (see
:func:`_pair_separation`): a low card's face, its pips few and small at the size it is
compared, does not tell a club from a spade, and its corner's pair part, learned on the
calibration's corners smeared a few fixed ways, said a smeared club's index was a spade's.
Measured on the cached studio frames of the development decks (seed 2024; every corner of
every frame of their aces, twos and threes, at the reader's outline, eight decks' clubs and
spades and two decks' hearts and diamonds): of 2,407 corners where the twin print spoke,
none said the wrong suit and 2,362 the right one by ``PAIR_OK``; on four of those decks'
999 black corners the pair part had said the wrong suit by ``PAIR_OK`` in 12 and the right
one in 594."""


def _twin_print(cal: Calibration, a: str, b: str) -> TwinPrint | None:
    """The twin print of ``a`` and ``b`` if they are one rank (of ``TWIN_RANKS``) in twin
    suits, else ``None``."""
    if a[0] != b[0] or a[0] not in TWIN_RANKS or TWINS.get(a[1]) != b[1]:
        return None
    return cal.twin_print(a, b)


class _Windows:
    """A card's corner windows as feature maps (see :func:`features`), each made when first
    iterated to.

    Most frames need one corner only (its index fits this deck's card; the
    other corner is then never straightened or compared). A corner with no
    index in it is left out, and so is one with a finger over its index (see
    ``COVERED_INDEX``): the other corner speaks, if any. A corner with a finger beside
    its index, over less of its weights than ``COVERED_INDEX_MASKED``, is compared where
    it shows (see :class:`~shoe_reader.camera.index.Uncovered`).
    """

    def __init__(self, corners: Sequence[Callable[[], np.ndarray]], cal: Calibration) -> None:
        self._pending = list(corners)
        self._cal = cal
        self._corners: list[np.ndarray] = []  # straightened so far, in order
        self._keeps: list[np.ndarray | None] = []  # where each is compared (None: all of it)
        self._maps: list[np.ndarray] = []
        self._kept: list[np.ndarray] = []  # the corners of ``_maps``, in the same order
        self._masked: list[np.ndarray | None] = []  # where each shows, to the twin print
        self._inks: dict[int, np.ndarray] = {}
        self._twins: dict[tuple[int, int], tuple[float, float] | None] = {}
        self._nudged: list[np.ndarray] | None = None
        self.own: dict[str, float] = {}
        """:func:`_own_index` of each card asked so far (see there)."""

    def __iter__(self) -> Iterator[np.ndarray]:
        i = 0
        while True:
            while i >= len(self._maps):
                if not self._pending:
                    return
                corner = self._pending.pop(0)()
                covered, keep = _index_covered(self._cal, corner)
                if covered > max(COVERED_INDEX, COVERED_INDEX_MASKED):
                    continue
                masked = keep if covered > _masked_from() else None
                try:
                    fmap = features(corner)
                except NoIndex:
                    self._corners.append(corner)  # (nudged still tries it)
                    self._keeps.append(masked)
                    continue
                if not self._cal.shows_index(fmap):
                    continue  # the end of a card that does not print the index
                self._corners.append(corner)
                self._keeps.append(masked)
                self._kept.append(corner)
                # The twin print compares its own boxes' ink, whole, and its fits say when a
                # finger spoils them: only a finger over more of the index than
                # COVERED_INDEX keeps it from a corner (see SKIN_NEVER_INK, _twin_shows).
                self._masked.append(masked if covered > COVERED_INDEX else None)
                self._maps.append(fmap if masked is None else uncovered(fmap, masked))
            yield self._maps[i]
            i += 1

    def twin(self, i: int, twin: TwinPrint, a: str, b: str) -> tuple[float, float] | None:
        """How clearly the ``i``-th corner (as iterated) says ``a`` rather than ``b`` by their
        twin print, and how well its suit symbol fits the better of the two; ``None``: the
        corner cannot say (see :func:`~shoe_reader.camera.twin_print.separation`). Worked
        out once per corner and twin print (a frame asks again for each contender)."""
        if not all(self.shows(i, twin)):
            return None  # a finger beside the index, over the print the twin print compares
        key = (i, id(twin))
        if key not in self._twins:
            found = self._inks.get(i)
            if found is None:
                found = self._inks[i] = ink(self._kept[i])
            self._twins[key] = twin_separation(twin, found)
        told = self._twins[key]
        if told is None or a < b:
            return told
        return -told[0], told[1]

    def shows(self, i: int, twin: TwinPrint) -> tuple[bool, bool]:
        """Whether the ``i``-th corner (as iterated) shows the rank and the suit symbol
        ``twin`` compares: a finger beside its index may lie over either (see
        :func:`_twin_shows`)."""
        masked = self._masked[i]
        if masked is None:
            return True, True
        return _twin_shows(twin, masked, self._kept[i].shape[:2])

    def one(self, i: int) -> _OneWindow:
        """The ``i``-th corner alone (as iterated)."""
        return _OneWindow(self, i)

    def nudged(self) -> list[np.ndarray]:
        """Feature maps of every corner window at the half feature-pixel steps (see
        :func:`nudged`), from the corners already straightened (and the rest); made once (a
        frame the face reads weakly asks again from its index read)."""
        if self._nudged is None:
            self._nudged = self._nudge()
        return self._nudged

    def _nudge(self) -> list[np.ndarray]:
        for _ in self:
            pass
        maps = []
        for corner, keep in zip(self._corners, self._keeps, strict=True):
            try:
                moved = nudged(corner)
            except NoIndex:
                continue
            maps.extend(moved if keep is None else [uncovered(m, keep) for m in moved])
        return maps


def _twin_shows(twin: TwinPrint, keep: np.ndarray, shape: tuple[int, ...]) -> tuple[bool, bool]:
    """Whether a corner window of ``shape`` shows the rank's and the suit symbol's boxes of
    ``twin`` (as far as they may lie off their place) where ``keep`` (feature pixels, 1
    where no skin lies) says it shows."""
    h, w = shape
    seen = cv2.resize(keep, (w, h), interpolation=cv2.INTER_NEAREST)
    m = SEARCH + 1
    shown = []
    for y0, y1, x0, x1 in (twin.rank_box, twin.suit_box):
        box = seen[max(y0 - m, 0) : y1 + m, max(x0 - m, 0) : x1 + m]
        shown.append(box.size > 0 and float(box.min()) >= 1.0)
    return shown[0], shown[1]


class _OneWindow:
    """One corner of a card's :class:`_Windows`, iterated alone."""

    def __init__(self, windows: _Windows, i: int) -> None:
        self._windows = windows
        self._i = i

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self._windows._maps[self._i]

    @property
    def map(self) -> np.ndarray:
        """The corner's feature map."""
        return self._windows._maps[self._i]

    def twin(self, _i: int, twin: TwinPrint, a: str, b: str) -> tuple[float, float] | None:
        return self._windows.twin(self._i, twin, a, b)

    def shows(self, twin: TwinPrint) -> tuple[bool, bool]:
        return self._windows.shows(self._i, twin)


def _contrary(cal: Calibration, windows: Iterable[np.ndarray], code: str) -> str:
    """Another rank of ``code``'s suit that a corner says clearly (see ``CONTRARY_RANK``), or
    ``""``.

    Asked of the samples of ``code``'s suit only (see :meth:`Calibration.among`):
    what the face reads is in doubt between those, and a fourth of the deck costs
    a fourth of the comparison. The suit is not asked: a suit smeared by the
    card's motion has been seen to say another suit as clearly (a club a spade, a
    heart a diamond), which the pair separation weighs with the smeared prints.
    """
    templates, names, pairs = cal.among(code, rank=True)
    mine = names == code[0]
    for fmap in windows:
        found = similarities_with(cal.rank_part, fmap, templates)
        best = int(np.argmax(found))
        if mine[best] or float(found[best]) < CONTRARY_RANK[0]:
            continue
        gap = 1.0 - pairs[best, mine]
        margin = float(np.min((found[best] - found[mine]) / np.maximum(gap, 1e-6)))
        if margin >= CONTRARY_RANK[1]:
            return str(names[best]) + code[1]
    return ""


def _masked_from() -> float:
    """The share of a corner's index under a finger above which the corner is compared where
    no skin lies (see ``SKIN_NEVER_INK``)."""
    return 0.0 if SKIN_NEVER_INK else COVERED_INDEX


def _index_covered(cal: Calibration, corner: np.ndarray) -> tuple[float, np.ndarray]:
    """How much of a corner window's index lies under skin: the larger share, of the rank's
    and of the suit's weights (see :attr:`Calibration.index_weights`), on skin pixels; and
    where the window shows no skin, feature pixels (``FEAT_H x FEAT_W``, 1 or 0)."""
    pixels = skin_pixels(corner)
    if not cv2.countNonZero(pixels):
        return 0.0, _ALL_SEEN  # (most corners: no skin, nothing to open, shrink or weigh)
    opened = cv2.morphologyEx(pixels, cv2.MORPH_OPEN, _FINGER)
    if not cv2.countNonZero(opened):
        return 0.0, _ALL_SEEN  # (red print alone: opened away)
    skin = opened.astype(np.float32)
    small = cv2.resize(skin, (FEAT_W, FEAT_H), interpolation=cv2.INTER_AREA)
    share = max(float(np.einsum("ij,ij->", w, small)) for w in cal.index_weights)
    if share <= _masked_from():
        return share, _ALL_SEEN
    # The finger's soft edge and shadow, a feature pixel round it, are left out too.
    keep = (cv2.dilate(small, _SKIN_REACH_FEAT) == 0).astype(np.float32)
    return share, keep


def _settle(
    cal: Calibration,
    per_card: np.ndarray,
    windows: _Windows,
    keep: np.ndarray | None = None,
    moved: Callable[[int, int], np.ndarray | None] | None = None,
) -> tuple[int, float, np.ndarray, int | None]:
    """The face's read with the contenders its index settles (``per_card``: the face's
    :meth:`~shoe_reader.camera.face_match.FaceBook.scores`, compared where it is not
    covered, ``keep``).

    Returns the card read, its fit, its share against every card (``inf``
    where the index settled it), and the first contender the index speaks
    for instead. ``windows`` are the card's corner maps.

    Where the index speaks for a contender whose face is all but the best
    one's (alike beyond ``ALIKE``: tango's kings of spades and clubs, one
    figure with other suit symbols), or that a face under a hand all but ties
    with the best (``COVERED_NO_SAY``), the face has no say between the two and
    the contender is the read, settled in turn against the rest (once: a
    second contender it speaks for is a dispute). So is one whose face the
    best one's is preferred to only where the outline happens to lie
    (``moved``: the face's scores with its outline moved, see :func:`_unsteady`).
    Any other contender the index speaks for is a dispute.
    """
    book = cal.book
    best = int(np.argmax(per_card))
    beaten: list[int] = []
    while True:
        fit = float(per_card[best])
        share = book.shares(per_card, best)
        share[beaten] = np.inf
        close = np.count_nonzero(share < SEP_FULL)
        if fit < FIT_MIN or close == 0 or close > PAIR_CONTENDERS:
            return best, fit, share, None
        for i in (int(i) for i in np.argsort(share)[:close]):
            verdict = _pair_separation(cal, windows, book.codes[best], book.codes[i])
            if verdict >= PAIR_OK:
                share[i] = np.inf
            elif verdict <= -PAIR_OK:
                no_say = book.pairs[best, i] > ALIKE or (
                    (
                        (keep is not None and float(share[i]) < COVERED_NO_SAY)
                        or (STEADY and moved is not None and _unsteady(book, moved, best, i))
                    )
                    # and no corner speaks clearly for the face's card
                    and _pair_separation(cal, windows, book.codes[i], book.codes[best]) >= PAIR_OK
                )
                if beaten or not no_say:
                    return best, fit, share, i
                beaten, best = [best], i
                break
        else:
            return best, fit, share, None


FINGER_HULL = True
"""A hand over the face also covers what looks blank within the convex hull of the skin seen
(see :func:`_hulls`), not only the skin: a glare spot on a finger washes its middle and tip out
to the paper's white, which the face compared as bare paper (ancient_french's five of spades,
pass 129: the middle pip under two glared fingertips, the face read a four in every frame,
both corners a five)."""
HULL_MIN = 0.01
"""Share of the face a piece of skin must have to be taken for a finger's (see :func:`_hulls`),
besides reaching the face's edge: print of a skin's hue (a court figure's face) comes in
smaller pieces, or inside the card, and is left as it is."""
HULL_BLANK = 0.85
"""Within a finger's hull, a pixel at least this bright (its darkest channel, against the
face's paper: the 90th percentile of it, as the features take it) shows no print, and is
taken as covered; print seen there is print, and is compared (the paper between two
fingers, a pip beside a finger's edge: tango's eight of hearts, pass 80, read by the face
at 0.50 with it, 0.39 with the whole hull covered)."""


def _hulls(skin: np.ndarray, face: np.ndarray) -> np.ndarray:
    """``skin`` (a straightened face's :func:`skin_pixels`, ``face`` its colour) with what
    looks blank (``HULL_BLANK``) within the convex hull of each piece of at least
    ``HULL_MIN`` of it that reaches the face's edge (a hand reaches in from beyond the
    card; a piece inside it is print: the hull of a foreign deck's skin-hued print, all
    of it covered, read a seven of spades of another design confidently).

    A finger is convex: what lies between the skin seen at a finger's sides (its lit
    middle, a nail, a glare spot washed out to the paper's white) is the finger too,
    and shows nothing of the print under it. A hand's fingers and palm are not convex,
    and their hull takes in the paper between the fingers: print seen there is kept,
    and only what looks blank is left out (a blank there tells nothing a finger could
    not hide).
    """
    if not _on_border(skin):
        # No skin on the face's edge: no piece reaches it (a piece's outline runs through
        # its outermost pixels), and nothing is filled: skin-hued print, or a fingertip
        # away from the edge (of the faces with skin in them at the "studio" level, 46 of
        # 830 on five development decks), is let through without finding the outlines.
        return skin
    contours, _ = cv2.findContours(skin, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    least = HULL_MIN * skin.size
    h, w = skin.shape
    hulls = skin
    for contour in contours:
        x, y, cw, ch = cv2.boundingRect(contour)
        edge = x == 0 or y == 0 or x + cw == w or y + ch == h  # a hand reaches in from outside
        if edge and cv2.contourArea(contour) >= least:
            if hulls is skin:
                hulls = skin.copy()
            cv2.fillConvexPoly(hulls, cv2.convexHull(contour), 1)
    if hulls is skin:
        return skin  # (no piece a finger's: nothing to fill)
    b, g, r = cv2.split(face)
    grey = cv2.min(cv2.min(b, g), r)  # each pixel's darkest channel
    blank = (grey >= HULL_BLANK * _percentile(grey, 90.0)).view(np.uint8)
    out: np.ndarray = skin | (hulls & blank)
    return out


def _on_border(mask: np.ndarray) -> bool:
    """Whether any pixel of ``mask`` (2-D, 0 or not) on its outermost rows or columns is set
    (the border as the locator takes a region's, :func:`locate.border`)."""
    return bool(border(mask).any())


def _percentile(grey: np.ndarray, q: float) -> float:
    """``np.percentile(grey, q)`` of 8-bit pixels (linear between the two nearest), from their
    counts: sorting them costs ten times as much."""
    at = q / 100 * (grey.size - 1)
    # The counts, their running sum and its two searches in one compiled pass (the same
    # levels and the same double interpolation: kernels.byte_percentile).
    return kernels.byte_percentile(np.ascontiguousarray(grey), int(at), at)


STEADY = True
"""The face has no say between its best card and a contender the corner index reads where its
preference for the best one is not steady: the outline moved half a feature pixel (see
``STEADY_MOVES``) makes it prefer the contender (see :func:`_unsteady`)."""
STEADY_MOVES = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1))
"""Moves (pixels of the face straightened at twice its feature size, half a feature pixel
each) of the outline with which a face's preference between two cards must hold. An outline
found at the "studio" level lies 2-5 frame pixels off the card (1-3 such pixels on a card
140-200 px wide): a preference that a smaller move reverses comes from where the outline
lies, not from the print."""


def _face_seen(face: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, float]:
    """A straightened face's features (see :func:`face_features`), where it is compared
    (``None``: all of it; else ``FACE_H x FACE_W``, 1 where no hand lies over it) and the
    share of it under skin."""
    maps = face_features(face)
    # A hand over the face: the face is compared where it is not covered.
    skin = skin_pixels(face)
    covered = 0.0  # (no skin: most faces, nothing to dilate)
    if cv2.countNonZero(skin):
        if FINGER_HULL:
            skin = _hulls(skin, face)
        skin = cv2.dilate(skin, _SKIN_REACH)
        covered = cv2.countNonZero(skin) / skin.size  # (skin is 0 or 1: its mean, exactly)
    keep = None
    if covered >= COVERED_SKIN:
        keep = (cv2.resize(skin, (FACE_W, FACE_H), interpolation=cv2.INTER_AREA) == 0).view(
            np.uint8
        )
    return maps, keep, covered


def _moved(book: FaceBook, face: np.ndarray, dx: int, dy: int) -> np.ndarray | None:
    """The face's scores (see :meth:`FaceBook.scores`) with its outline moved ``dx, dy``
    pixels of ``face`` (``None``: the moved face cannot be read)."""
    h, w = face.shape[:2]
    shift = np.array([[1, 0, dx], [0, 1, dy]], np.float32)
    moved = cv2.warpAffine(face, shift, (w, h), borderMode=cv2.BORDER_REPLICATE)
    try:
        maps, keep, _covered = _face_seen(moved)
    except NoIndex:
        return None
    return book.scores(maps, keep)


def _unsteady(
    book: FaceBook, moved: Callable[[int, int], np.ndarray | None], best: int, other: int
) -> bool:
    """Whether the face's preference for card ``best`` over card ``other`` reverses with its
    outline moved by one of ``STEADY_MOVES``.

    Two faces that differ only in small print (tango's eights of spades and of
    clubs: one layout, pips a few feature pixels wide) are told apart by the face
    only at the edges of those pips, where an outline half a feature pixel off
    changes the features most: the face under a finger preferred the eight of
    clubs by a share of 0.14-0.37 to the spades both corners read, and with its
    outline moved half a feature pixel preferred the spades (shares down to
    -0.14). Where the faces differ in layout (a heart's and a diamond's seven on
    anglo_modern, an eight's pips against a six's), their preference held under
    every move (shares 0.16 and more). Measured on the development decks at the
    "studio" level (the cached frames of seed 2024, 14 decks, and of seed 7, six
    decks; every disputed frame, before and after): of the face-against-index
    disputes the reader settles here, 130 had the index right and 157 the face;
    with this rule 94 and 158 are left, and every frame it changed (31) is read as
    the card shown, none as another card. Passes 2,791 -> 2,792 of 2,800 and 355
    -> 357 of 360, 0 misread; the held-out check decks read the same 110 of 128.
    It runs only where the index speaks for a contender against the face (up to
    eight faces warped and compared): the median frame is unchanged.
    """
    for dx, dy in STEADY_MOVES:
        scores = moved(dx, dy)
        if scores is not None and float(scores[best]) <= float(scores[other]):
            return True
    return False


def _read(
    cal: Calibration, face: np.ndarray, corners: Sequence[Callable[[], np.ndarray]]
) -> tuple[CardRead, FaceMatch | None]:
    """Read a straightened face (any size of the card's shape) and, if it is read, its corners."""
    try:
        maps, keep, covered = _face_seen(face)
    except NoIndex as exc:
        return CardRead(None, 0.0, exc.reason, cause=COVERED), None
    book = cal.book
    # Faces the whole face cannot tell from the best one (the five of spades
    # and of clubs of a deck whose small pips differ by a few pixels) are told
    # apart by their corner index, at full resolution, on the print that
    # differs between the two. Where the index says the other card, the frame
    # is unreadable, never read as the index's card: on a dark table the
    # edge found can lie off the printed outline, and a corner a pixel off has
    # been seen to speak clearly for the wrong suit while the face was right.
    windows = _Windows(corners, cal)
    per_card = book.scores(maps, keep)  # compared once: the index read below asks again
    # (each move's scores once: a second contender asks for the same moved faces)
    moved = cache(partial(_moved, book, face))
    best, fit, share, other = _settle(cal, per_card, windows, keep, moved)
    if other is not None:
        pair = (book.codes[best], book.codes[other])
        why = f"{DISPUTED}: face reads {pair[0]}, index reads {pair[1]}"
        return CardRead(None, 0.0, why, disputed=True, cause=COVERED, dispute=pair), None
    code = book.codes[best]
    runner = int(np.argmin(share))
    separation = float(share[runner]) if np.isfinite(share[runner]) else 1.0
    found = FaceMatch(code, fit, separation, book.codes[runner])
    confidence = _confidence(found.fit, found.separation)
    why = (
        f"face not clear ({found.code}? fit {found.fit:.2f}, "
        f"separation {found.separation:.2f} from {found.runner_up})"
    )
    index = 0.0
    if confidence > 0:
        # The face's layout is right; its corner index must be this deck's
        # too (a card of the same rank and suit from another deck has other
        # print there).
        index = _own_index(cal, windows, found.code)
        # A frame blurred enough to soften the face (nearer its softened copy)
        # softens the index as much: the index must then fit as well as the face
        # does, and at least INDEX_FLOOR (another deck's index on a face like this
        # deck's fits less well than the face). A sharp frame is held to INDEX_MIN.
        # (An index that fits to INDEX_OK has its full factor whichever limit holds: whether
        # the frame is blurred is then not asked.)
        low = INDEX_MIN
        if index < INDEX_OK and book.blurred(maps, best, keep):
            low = min(INDEX_MIN, max(found.fit, INDEX_FLOOR))
        factor = _within_one((index - low) / (INDEX_OK - INDEX_MIN))
        if factor < confidence:
            why = f"index not this deck's {found.code} (fit {index:.3f})"
        confidence *= factor
    if confidence >= WEAK and index < INDEX_OK:
        # An index that fits the face's card only nearly: no corner may clearly say another
        # rank of its suit (a glare spot over a five's middle pip leaves a four's face, its
        # corners saying five clearly).
        contrary = _contrary(cal, windows, found.code)
        if contrary:
            why = f"{DISPUTED}: face reads {found.code}, index reads {contrary}"
            pair = (found.code, contrary)
            return CardRead(None, 0.0, why, disputed=True, cause=COVERED, dispute=pair), None
    if confidence >= WEAK and not _suit_said(cal, per_card, found.code):
        why = SUIT_UNSAID.format(found.code)
        confidence = 0.0
    if confidence >= WEAK:
        return CardRead(found.code, confidence, "", deck_fit=index), found
    # The face alone is not clear (a finger, a glare spot across it), or the
    # frame too blurred to tell this deck's index from another deck's print:
    # the index corners are read on their own, rank and suit.
    said: set[str] = set()
    by_index = _read_index(cal, maps, per_card, windows, best, keep, said)
    # What the face and the corners say, for the pass to weigh (see CardRead.face).
    clear = found.code if _confidence(found.fit, found.separation) >= WEAK else ""
    heard = tuple(sorted(said))
    suit = _face_suit(book, per_card)
    if by_index is not None:
        return replace(by_index, face=clear, corners=heard, face_suit=suit), found
    cause = _cause(covered, found, index)
    read = CardRead(None, 0.0, why, cause=cause)
    if confidence > 0:
        read = CardRead(found.code, confidence, why, deck_fit=index, cause=cause)
    return replace(read, face=clear, corners=heard, face_suit=suit), found


def _face_suit(book: FaceBook, per_card: np.ndarray) -> str:
    """The suit the face says (see ``CardRead.face_suit``), or ``""``."""
    best = int(np.argmax(per_card))
    if float(per_card[best]) < FIT_MIN:
        return ""
    suit = book.codes[best][1]
    share = book.shares(per_card, best)
    other = [i for i, code in enumerate(book.codes) if code[1] != suit]
    return suit if other and float(share[other].min()) >= FACE_SUIT else ""


SUIT_UNSAID = "face does not say the suit of {} (index at one end only)"
"""Why a read of a deck printing its index at one end is not confident (see :func:`_suit_said`)."""


def _suit_said(cal: Calibration, per_card: np.ndarray, code: str) -> bool:
    """Whether a read of ``code`` may stand on its suit: always where the deck prints its index
    at both ends; where it prints it at one end only (see
    :func:`~shoe_reader.camera.calibration.index_positions`), only if the face says the suit
    (see ``FACE_SUIT``). Such an end may hold the rank alone (tango_nuevo prints its suit in
    the other top corner, the svg-oxygen decks at the other end), which tells a spade from a
    club no more than its colour does: the face is then the only evidence of the suit, and
    svg-oxygen's ace of spades, its face nearest the ace of clubs, was read as the ace of
    clubs in three frames, the rank's corner agreeing."""
    return cal.other_end is None or _face_suit(cal.book, per_card) == code[1]


def _cause(covered: float, found: FaceMatch, index: float) -> str:
    """Why a card in view was not read: covered (skin over ``covered`` of it), blurred, or
    unknown (nothing of this deck fits a clear frame: another deck's card, a joker, a
    blank)."""
    if covered >= COVERED_SKIN:
        return COVERED
    if found.fit < FIT_MIN or (found.fit >= SHARP and index < INDEX_MIN):
        return UNKNOWN
    return BLURRED


def _own_index(cal: Calibration, windows: _Windows, code: str) -> float:
    """:func:`index_fit` of ``code``, also tried half a feature pixel off; worked out once
    per card and frame (``windows.own``): a frame the face reads weakly asks again of the
    card its index reads, most often the same card."""
    known = windows.own.get(code)
    if known is not None:
        return known
    index = index_fit(cal, windows, code, enough=INDEX_OK)
    if index < INDEX_OK:
        # Its own index half a feature pixel off fits less than a whole one.
        index = max(index, index_fit(cal, windows.nudged(), code, INDEX_OK))
    windows.own[code] = index
    return index


TWINS = {"C": "S", "S": "C", "H": "D", "D": "H"}
"""The suit of the same colour and like shape (see :func:`_twin_checked`)."""


def _twin_checked(
    cal: Calibration, fmap: np.ndarray | _OneWindow, rank: str, suit: PartRead
) -> PartRead:
    """A corner's suit read, unless the print where this deck's two cards of ``rank`` and the
    suit and its twin differ (clubs and spades, hearts and diamonds) clearly says the twin
    (:func:`_pair_separation`, the smeared prints too): then the read with no margin (the
    corner says no suit).

    The suit part is learned over every suit at once, where the twin's glyph differs from
    the suit's on a few lobes only: a smeared club's corner read a spade, clearly. Measured on
    the development decks at the "studio" level (every corner, fit 0.84 or more, of the
    passes of seed 2024 and seed 7 where one said a wrong suit, and 15 other passes a deck):
    of 1,051 corners saying a wrong suit, 381 said it by the suit part's margin of 0.3, 214
    once those whose twin print said the twin were left out (of 5,446 saying the right suit,
    4 left out). The twin print is not taken for the suit itself: it said a wrong suit in 91
    corners (83 of the 1,051, 8 right ones; up to 4.6, a smeared diamond told a heart), and
    taken so it read neoclassical's two of spades as the two of clubs in three frames.

    An ace, two or three (``TWIN_RANKS``) of a deck whose corners print the rank above the
    suit symbol is told by the twin print as well (see :func:`_pair_separation`): the suit
    part's margin and the twin print's separation, each in units of how far apart the two
    prints are, are summed, and the corner says the suit their sum says, by that sum (or by
    the suit part's margin over the other colour's suits, if less): a corner whose twin print
    clearly says the club reads it alone, whatever little the suit part says, and one whose
    suit part leans to the spade by less than the twin print says the club says the club. A
    corner with a finger over part of its suit symbol (compared where it shows, see
    ``COVERED_INDEX_MASKED``) says no suit: what shows does not tell the two. Measured on
    the cached studio frames (seed 2024; every corner of the aces, twos and threes read at
    the reader's outline, rank right, suit fit 0.8 or more, of ancient_french,
    anglo_modern, svg-jolly-royal, svg-konqi-modern and svg-standard), read as before (the
    suit part's read, the twin print vetoing it where it said the twin by ``PAIR_OK``), the
    corners said the wrong suit of the two by 0.3 (the least with which a suit counts alone)
    in 125 and the right one in 1,127; by the sum, in 104 and 1,331. The twin print alone is
    not taken: on svg-standard's twos and threes of spades it said the club by up to 1.08
    in three corners, where the suit part said the spade by 0.89-0.97.
    """
    twin = TWINS.get(suit.label)
    if (
        twin is not None
        and isinstance(fmap, _OneWindow)
        and suit.score >= PAIR_FIT
        and (printed := _twin_print(cal, rank + suit.label, rank + twin)) is not None
    ):
        # A low card's twin print (see TWIN_RANKS) and the suit part each say by how much
        # the corner shows one suit rather than its twin, in units of how far apart the
        # two prints are: the corner says the suit their sum says, by that sum (or by the
        # suit part's margin over the other colour's suits, if less).
        if not fmap.shows(printed)[1]:
            # A finger over part of the suit symbol: what shows does not tell the two.
            return replace(suit, score=0.0, margin=0.0, confidence=0.0)
        told = _pair_separation(cal, fmap, rank + suit.label, rank + twin)
        if told == 0.0:
            return suit  # the twin print cannot measure this corner: the suit part's read
        said = suit.margin + told
        if said > 0 and told < 0:
            return replace(suit, margin=said, confidence=_confidence(suit.score, said, PART_LIMITS))
        side, other = (suit.label, twin) if said > 0 else (twin, suit.label)
        alone = _classify(cal.suit_part, fmap.map, cal.suit_part.labels == other)
        if alone.label != side:
            return replace(suit, label=side, margin=0.0, confidence=0.0)
        margin = min(alone.margin, abs(said))
        return PartRead(side, alone.score, margin, _confidence(alone.score, margin, PART_LIMITS))
    if suit.score < min(SUIT_ALONE[0], CONTRARY[0]) or suit.margin < min(
        SUIT_ALONE[2], CONTRARY[1]
    ):
        return suit  # says no suit anyway (nor against one): not worth the comparison
    if twin is None or cal.pair_part(rank + suit.label, rank + twin) is None:
        return suit  # the two cards' corners do not differ (or a card is not calibrated)
    windows = fmap if isinstance(fmap, _OneWindow) else (fmap,)
    if _pair_separation(cal, windows, rank + suit.label, rank + twin) <= -PAIR_OK:
        return replace(suit, score=0.0, margin=0.0, confidence=0.0)
    return suit


def _read_index(
    cal: Calibration,
    maps: np.ndarray,
    per_card: np.ndarray,
    windows: _Windows,
    face_best: int,
    keep: np.ndarray | None = None,
    said: set[str] | None = None,
) -> CardRead | None:
    """The card its corner indices read, where the face does not say otherwise (``None``: no
    corner reads a card; a read with no code: the evidence disagrees). ``per_card``: the
    face's scores, as :func:`_settle` had them.

    Each corner is read on its own, rank and suit (see :func:`_classify`), under
    limits measured on blurred, covered frames (a wrong rank never fitted
    better than 0.84 or came clearer than 0.28). Two corners that read two
    cards, a face that reads another card clearly, a face that fits the card
    poorly (another deck's), or an index that fits this deck's print of the
    card less well than the face fits it (another deck's index on a face like
    this deck's) make the frame unreadable, never a read of either.
    """
    reads: list[tuple[str, float]] = []
    # What every corner clear enough to look at says, however weakly (kept in the caller's
    # ``said``: the pass weighs it with its other frames).
    said = set() if said is None else said
    parts: list[PartRead] = []  # every corner's rank and suit read
    for i, fmap in enumerate(windows):
        rank = _classify(cal.rank_part, fmap)
        suit = _twin_checked(cal, windows.one(i), rank.label, _classify(cal.suit_part, fmap))
        parts += [rank, suit]
        conf = min(
            _confidence(rank.score, rank.margin, RANK_ALONE),
            _confidence(suit.score, suit.margin, SUIT_ALONE),
        )
        if conf > 0:
            reads.append((rank.label + suit.label, conf))
        if min(rank.score, suit.score) >= PAIR_FIT:
            said.add(rank.label + suit.label)
    if not reads:
        return None
    codes = {c for c, _conf in reads} | said
    if len(codes) > 1:
        why = f"{CORNERS_DISAGREE}: {' and '.join(sorted(codes))}"
        return CardRead(None, 0.0, why, cause=COVERED)
    code = reads[0][0]
    book = cal.book
    if code not in book.codes:
        return None
    mine = book.codes.index(code)
    fit = float(per_card[mine])
    if fit < FIT_MIN:
        return CardRead(None, 0.0, f"face not this deck's {code} (fit {fit:.2f})", cause=UNKNOWN)
    # The face not ruling the card out (its best, or within ``SEP_MIN`` of it), the frame
    # leans to it by its index (see CardRead.index), whatever it is read as below.
    lean = face_best == mine or float(book.shares(per_card, face_best)[mine]) < SEP_MIN
    leaning = code if lean else ""
    settled: list[float] = []  # the index's say against the face's contenders, once asked

    def settles() -> float:
        if not settled:
            # No corner may say another rank or suit clearly, however poorly it fits.
            contrary = any(
                p.label not in code and p.score >= CONTRARY[0] and p.margin >= CONTRARY[1]
                for p in parts
            )
            settled.append(-np.inf if contrary else _index_settles(cal, per_card, windows, mine))
        return settled[0]

    if len(reads) == 1 and len(said) < 2:
        # One corner alone (the other covered, or too blurred to say anything): a corner
        # has been seen to read a club as a spade clearly, so the face must prefer the
        # card clearly too, where it is not covered; or, where the face cannot tell it
        # from others (the pips that differ are under the hand), the corner must tell it
        # from each of them on the print that differs (see :func:`_index_settles`).
        share = book.shares(per_card, mine)
        if (face_best != mine or float(share.min()) < ONE_CORNER_FACE) and settles() < PAIR_OK:
            why = f"index not clear: one corner reads {code}, the face does not say so clearly"
            cause = COVERED if keep is not None else BLURRED
            # How well the index fits this deck's print, for the pass (VotingRules.deck_fit).
            deck = _own_index(cal, windows, code) if lean else 1.0
            return CardRead(None, 0.0, why, cause=cause, index=leaning, deck_fit=deck)
    if face_best != mine:
        share = book.shares(per_card, face_best)[mine]
        if _confidence(float(per_card[face_best]), float(share)) >= WEAK:
            other = book.codes[face_best]
            why = f"{DISPUTED}: face reads {other}, index reads {code}"
            return CardRead(None, 0.0, why, disputed=True, cause=COVERED, dispute=(other, code))
    index = _own_index(cal, windows, code)
    # This deck's index, as in :func:`_read` (the face path), and never below the floor.
    # (Not asked whether the frame is blurred where the index fits to INDEX_OK: see _read.)
    blurred = index < INDEX_OK and book.blurred(maps, mine, keep)
    low = min(INDEX_MIN, max(fit, INDEX_FLOOR)) if blurred else INDEX_MIN
    factor = _within_one((index - low) / (INDEX_OK - INDEX_MIN))
    if index < INDEX_FLOOR or factor <= 0:
        cause = UNKNOWN if fit >= SHARP else BLURRED
        why = f"index not this deck's {code} (fit {index:.2f})"
        return CardRead(None, 0.0, why, cause=cause, index=leaning, deck_fit=index)
    miss = 1.0
    for _code, conf in reads:
        miss *= 1.0 - conf
    against_face = face_best != mine
    if against_face or (1.0 - miss) * factor < WEAK:
        # The index told apart from every card the face leaves in doubt, on the print
        # that differs, is evidence of its own.
        told = settles()
        if told >= PAIR_OK:
            miss *= 1.0 - min(told / (2 * PAIR_OK), 1.0)
            against_face = False
    confidence = (1.0 - miss) * factor * (AGAINST_FACE if against_face else 1.0)
    if confidence >= WEAK and not _suit_said(cal, per_card, code):
        why = SUIT_UNSAID.format(code)
        return CardRead(None, 0.0, why, cause=COVERED if keep is not None else BLURRED)
    if confidence >= WEAK:
        return CardRead(code, confidence, "", deck_fit=index)
    cause = COVERED if keep is not None else BLURRED
    return CardRead(code, confidence, "index not clear", deck_fit=index, cause=cause, index=leaning)


def _index_settles(cal: Calibration, per_card: np.ndarray, windows: _Windows, mine: int) -> float:
    """How clearly the corner index tells card ``mine`` from every card the face cannot: the
    least :func:`_pair_separation` against them (``-inf``: the face rules it out).

    The face, where it is not covered, must not prefer another card by more than
    it can tell (a share of ``SEP_MIN``: a hand over the middle pips leaves an
    eight and a nine alike); every card it leaves within reach of ``mine`` (at
    most ``ONE_CORNER_CONTENDERS``) must then be told apart by the index, on the
    print that differs between the two.
    """
    book = cal.book
    best = int(np.argmax(per_card))
    if float(per_card[best]) < FIT_MIN:
        return -np.inf
    if best != mine and float(book.shares(per_card, best)[mine]) >= SEP_MIN:
        return -np.inf
    against = book.shares(per_card, mine)
    near = [int(i) for i in np.argsort(against) if against[i] < SEP_FULL]
    if len(near) > ONE_CORNER_CONTENDERS:
        return -np.inf
    told = 1.0
    for i in near:
        told = min(told, _pair_separation(cal, windows, book.codes[mine], book.codes[i]))
        if told < PAIR_OK:
            break
    return told


def index_fit(
    cal: Calibration, windows: Iterable[np.ndarray], code: str, enough: float = np.inf
) -> float:
    """How well the better of a card's corner windows (feature maps, see :func:`features`)
    matches ``code``'s calibrated index.

    The windows are tried in turn until one fits to ``enough`` (the reader
    needs no better: the other corner, most often as good, is then not
    compared at all).
    """
    own = cal.index_templates(code)
    best = 0.0
    for fmap in windows:
        fit = np.inf
        for part, templates in zip((cal.rank_part, cal.suit_part), own, strict=True):
            fit = min(fit, float(similarities_with(part, fmap, templates).max()))
            if fit <= best:
                break  # this window cannot be the better one
        best = max(best, fit)
        if best >= enough:
            break
    return best


def read_outline(cal: Calibration, image: np.ndarray, quad: np.ndarray) -> CardRead:
    """Read the card at ``quad`` in ``image``, warping only what is compared.

    The face is warped straight at twice its feature size, and the two corner
    windows at full size only if the face is read. A deck printed with a dark
    outline at its edge shows its outer edge on a light table and only the
    outline's inner edge on a dark one: a card not read confidently is then
    also read as if its edge lay half the outline's width, then all of it,
    further out; such a grown outline's read may not name a card the corners of
    the outline it grew from did not (see ``GROWN_NAMED``).
    """

    named: set[str] = set()  # what the corners of this outline's reads so far named

    def attempt(q: np.ndarray) -> tuple[CardRead, FaceMatch | None]:
        face = straighten_small(image, q, 2 * FACE_W, 2 * FACE_H)
        corners = [partial(straighten_corner, image, q, t, cal.mirrored) for t in (False, True)]
        read, found = _read(cal, face, corners)
        if GROWN_NAMED and named and read.confidence >= WEAK and read.code not in named:
            why = f"{GROWN_DISAGREES}: {' and '.join(sorted(named))}, grown {read.code}"
            return CardRead(None, 0.0, why, cause=COVERED), None
        named.update(read.corners)
        return read, found

    quad = snap_to_outline(image, quad, cal.outline)
    read, found = attempt(quad)
    if read.disputed:
        # Face and index disagreed: another outline would only roll the dice
        # again between the two cards (and has been seen to read the wrong one).
        return read
    if read.confidence < WEAK and cal.outline >= 1.0:
        # The edge found on a dark table lies anywhere from the outline's
        # inner edge to its outer one (the outline fades into the table).
        for grow in (cal.outline / 2, cal.outline):
            wider, found2 = attempt(grown(quad, grow))
            if found2 is not None and (found is None or wider.confidence > read.confidence):
                read, found = wider, found2
            if read.confidence >= WEAK:
                break
    return read


def _ink_colour(maps: np.ndarray) -> np.ndarray:
    """Chroma (red-green, blue-green) of the most colourful quarter of the inked pixels of a
    face's corner maps.

    Not the mean of all its ink: a thin red rank printed alone in one corner
    (the suit only on the face) has few pixels of full colour among its
    anti-aliased edges, and the other corner of a low card holds only grey
    ornament, so the mean of a red two came out nearer black than red. The
    most colourful pixels are the ink's own colour however thin it is, and a
    black index has none.
    """
    inked = maps[..., 0] > 0.3
    if not inked.any():
        return np.zeros(2, np.float32)
    chroma = maps[inked][:, 1:]
    strength = np.einsum("ij,ij->i", chroma, chroma)
    top = strength >= np.percentile(strength, 75)
    return np.asarray(chroma[top].mean(axis=0), np.float32)


def _told_apart_by_index(cal: Calibration, a: str, b: str) -> bool:
    """Whether the corner indices of faces ``a`` and ``b`` differ (the same photograph twice
    does not: its two copies' corners are alike wherever they are compared)."""
    likeness = cal.pair_likeness(a, b)
    return likeness is not None and likeness < INDEX_APART


def check_deck(cal: Calibration) -> dict[str, str]:
    """Faces that would teach a misread, by card, with why.

    A photograph under the wrong name (``KD.png`` showing the king of spades)
    is read by the rest of the deck's corner indices as the suit it shows.
    And two faces of different cards must differ: if they are all but
    identical (the same face photographed twice) the deck would be read by a
    coin toss, and the calibration names both faces.
    """
    problems: dict[str, str] = {}
    shown: dict[str, str] = {}  # a face printed in another suit's colour: the suit it shows
    cards = np.array(cal.cards)
    sharp = ~cal.soft
    colours = {code: _ink_colour(cal.maps[(cards == code) & sharp]) for code in set(cal.cards)}
    for code in sorted(colours):
        # Court figures reach into the corner (and some decks print no rank
        # there): only the corners of number cards are asked. A face is
        # misnamed when its index is printed in another colour than the other
        # faces of its suit, nearer another suit's; which suit it shows, the
        # rest of the deck's corner indices say.
        if code[0] in COURTS:
            continue
        by_suit = {
            suit: np.array(
                [v for c, v in colours.items() if c[1] == suit and c != code and c[0] not in COURTS]
            )
            for suit in SUITS
        }
        means = {suit: v.mean(axis=0) for suit, v in by_suit.items() if len(v)}
        if code[1] not in means:
            continue
        x = colours[code]
        own = float(np.linalg.norm(x - means[code[1]]))
        others = [t for t in means if t != code[1]]
        if not others:
            continue
        nearest = min(others, key=lambda t: float(np.linalg.norm(x - means[t])))
        apart = float(np.linalg.norm(means[nearest] - means[code[1]]))
        if apart < MISCOLOURED or float(np.linalg.norm(x - means[nearest])) > own / 2:
            continue  # printed in its suit's colour (or the suits share a colour)
        alike = [t for t in means if np.linalg.norm(x - means[t]) < own / 2]
        suit = _classify(cal.suit_part, cal.maps[(cards == code) & sharp][0], cards == code)
        shown[code] = suit.label if suit.label in alike else nearest
    # Enough faces showing another suit, all one way (none shows a suit another is named as):
    # the corner holds no index; swapped photographs would show each other's suits.
    no_index = len(shown) >= MISCOLOURED_CORNERS and not {c[1] for c in shown} & set(shown.values())
    for code, shows in shown.items():
        if no_index:
            problems[code] = (
                f"its corner is printed like suit {shows}, not {code[1]}, and so are "
                f"{len(shown) - 1} other faces' corners, none the other way round as swapped "
                "photographs would be: no index in the corner compared (a frame line there?)"
            )
        else:
            problems[code] = (
                f"the index looks like suit {shows}, not {code[1]}: photograph misnamed?"
            )
    book = cal.book
    same = book.pairs > SEPARATE
    for i, j in zip(*np.nonzero(same), strict=True):
        if i < j:
            a, b = book.codes[i], book.codes[j]
            if _told_apart_by_index(cal, a, b):
                continue  # court figures alike but for the suit (tango's kings): the index differs
            twice = "same face photographed twice?"
            problems.setdefault(a, f"face cannot be told from {b}'s: {twice}")
            problems.setdefault(b, f"face cannot be told from {a}'s: {twice}")
    return problems


_Best = tuple[CardRead | None, np.ndarray | None]
"""A read so far and the outline it was read on."""


class Recognizer:
    """Locate, straighten and read the card in a region of interest of each frame."""

    def __init__(
        self,
        calibration: Calibration,
        roi: tuple[int, int, int, int] | None = None,
        locator: Locator | None = None,
    ) -> None:
        # The per-frame products are small: BLAS threads only add overhead (and
        # contend with the rest of the process), so matrix maths runs on one core.
        threadpool_limits(limits=1, user_api="blas")
        self.calibration = calibration
        # What the calibration learns lazily is learned now, not on the first card.
        _ = (
            calibration.book,
            calibration.rank_part,
            calibration.suit_part,
            calibration.index_weights,
            calibration.end_part,
        )
        for code in calibration.book.codes:
            calibration.index_templates(code)
            twin = code[0] + TWINS[code[1]]
            if twin in calibration.book.codes:
                calibration.pair_smeared(code, twin)  # see _twin_checked; 26 pairs, ~0.2 s
                _twin_print(calibration, code, twin)
        self.roi = roi
        self.locator = locator or Locator(aspect=calibration.aspect)
        self._place: tuple[tuple[int, ...], np.ndarray] | None = None
        """The region's shape and the full-scale quad of the card the last frame showed."""
        self._moved: np.ndarray | None = None
        """How far the card's centre moved from the frame before the last to the last."""
        self._code: str | None = None
        """The card the frames at this place last read confidently: a read where the card is
        followed must name it (see :meth:`_agrees`)."""
        self._contested = False
        """The frames at this place read two cards confidently (see ``TRACK_CONTESTED``)."""
        self._windows: dict[tuple[int, int], Locator] = {}
        self._step = max(1, round(1 / self.locator.scale))
        """Full-scale pixels a reduced pixel spans: a window's corners lie on that grid."""
        self.searches = 0
        """Frames searched whole (see :meth:`_tracked`): what tracking saves, for tests."""
        self._thorough = Locator(
            aspect=self.locator.aspect,
            aspect_tolerance=self.locator.aspect_tolerance,
            min_card_fraction=self.locator.min_card_fraction,
            thorough=True,
            refine=True,
        )

    def _other_outlines(
        self,
        image: np.ndarray,
        found: Outline,
        tried: list[np.ndarray | None],
        best: _Best,
    ) -> _Best:
        """The best of ``best`` and the reads of up to ``OTHER_OUTLINES`` outlines of
        ``found``'s search not ``tried`` yet (see :meth:`Locator.outlines`), until one is
        read; each with the outline it was read on."""
        read, read_on = best
        done = [q for q in tried if q is not None]
        n = 0
        for quad in self._thorough.outlines(found):
            if n >= OTHER_OUTLINES or (read is not None and read.confidence >= WEAK):
                break
            if any(np.allclose(quad, q, atol=2.0) for q in done):
                continue
            done.append(quad)
            other = read_outline(self.calibration, image, quad)
            if read is None or other.confidence > read.confidence:
                read, read_on = other, quad
            n += 1
        return read, read_on

    def _beside_outlines(
        self, image: np.ndarray, quads: list[np.ndarray | None], best: _Best
    ) -> _Best:
        """The best of ``best`` and the reads of ``quads`` with their sides found beside a
        hand (see :meth:`Locator.beside`), until one is read; each with the outline it was
        read on."""
        read, read_on = best
        done: list[np.ndarray] = []
        for quad in quads:
            if quad is None or any(np.allclose(quad, q, atol=1.0) for q in done):
                continue
            done.append(quad)
            moved = self._thorough.beside(image, quad)
            if moved is None:
                continue
            other = read_outline(self.calibration, image, moved)
            if read is None or other.confidence > read.confidence:
                read, read_on = other, moved
            if read.confidence >= WEAK:
                break
        return read, read_on

    def forget(self) -> None:
        """Forget where the last frame's card was (a source reopened: the next frame may show
        anything anywhere)."""
        self._place = None
        self._moved = None
        self._code = None
        self._contested = False

    def _remember(self, image: np.ndarray, quad: np.ndarray | None, read: CardRead | None) -> None:
        """Where this frame's card is (``None``: no whole card), how far it moved, and the card
        it was read as if it was read confidently."""
        last = self._place
        if quad is None:
            self.forget()
            return
        self._moved = None
        if last is not None and last[0] == image.shape:
            moved = quad.mean(axis=0) - last[1].mean(axis=0)
            if float(np.hypot(*moved)) <= TRACK_STEP * float(side_lengths(quad).max()):
                self._moved = moved
        if last is None or last[0] != image.shape or self._moved is None:
            self._code = None  # a card somewhere else: another card, maybe
            self._contested = False
        if read is not None and self._kept(read):
            if self._code is not None and read.code != self._code:
                self._contested = TRACK_CONTESTED
            self._code = read.code
        self._place = image.shape, quad

    @staticmethod
    def _kept(read: CardRead) -> bool:
        return read.code is not None and read.confidence >= WEAK and not read.disputed

    def _agrees(self, read: CardRead) -> bool:
        """Whether a read where the card is followed is kept: confident, and of the card the
        frames before read confidently at this place.

        An outline a few pixels off the card's edge (one side on a shadow or a hand's edge
        the snap took) has been seen to read the card's twin confidently (svg-jolly-royal's
        four of clubs as the four of spades, seed 13, pass 33, its last frame: the followed
        outline's long sides 3 % shorter and 4 % longer than the frame before's, the searched
        one read 4C). Another card than the one followed is left to the whole region's
        search, which reads every frame as before: tracking never names a card the search
        did not name first in the pass."""
        return self._kept(read) and read.code == self._code

    def _followed(self, image: np.ndarray) -> FrameRead | bool:
        """The card read where the last two frames say it is now, its outline snapped onto
        this frame's edges without a search, if its edges bear it out as a searched
        outline's must and it is read confidently; with one frame seen, where it would be
        had it slid along its length (see :meth:`_followed_out`).

        A card slides out of the shoe at a steady speed: the last frame's outline moved on
        as far as the card moved from the frame before lies within a few pixels of its
        edges in this one (the snap's reach across a side is 12 px).

        Not followed, ``False``; or ``True`` if the card was found there whole, its edges
        bearing it out, and read weakly: the frame is one the window would only read
        again as weakly, and the whole region's search, with its slower looks, is left
        (never for the second frame, whose moves are guesses)."""
        if not TRACK or self._place is None or self._code is None:
            return False
        if self._contested:  # see TRACK_CONTESTED
            return False
        shape, last = self._place
        if shape != image.shape:
            return False
        if self._moved is None:
            return self._followed_out(image, last) if TRACK_OUT else False
        estimate = last + self._moved.astype(np.float32)
        found = self._follow(image, estimate)
        if found is None:
            return False
        kept = self._read_at(image, found)
        return True if kept is None else kept

    def _follow(self, image: np.ndarray, estimate: np.ndarray) -> np.ndarray | None:
        """The outline snapped onto this frame's edges near ``estimate`` (see :meth:`_followed`),
        if it lies within the snap's reach of it and away from the region's edge."""
        h, w = image.shape[:2]
        edge = TRACK_FOLLOW_EDGE
        if estimate.min() < edge or float(estimate[:, 0].max()) > w - edge:
            return None
        if float(estimate[:, 1].max()) > h - edge:
            return None
        found = self.locator.follow(image, estimate)
        if found is None:
            return None
        quad = found[1]
        if float(np.abs(quad - estimate).max()) > TRACK_SNAP:
            return None
        return quad

    def _followed_out(self, image: np.ndarray, last: np.ndarray) -> FrameRead | bool:
        """A pass's second frame (the card seen once, how far it moves not known yet): the card
        read where it would be had it slid along its long side, either way, by one of
        ``TRACK_OUT``'s shares of its length; ``False`` where none is found there whole, or the
        one found is not read confidently (the window round the last place is looked at, as
        before)."""
        sides = side_lengths(last)
        k = int(np.argmax(sides))
        along = (last[(k + 1) % 4] - last[k]) / max(float(sides[k]), 1.0)
        for share in TRACK_OUT:
            for sign in (1.0, -1.0):
                quad = self._follow(image, last + (sign * share * float(sides[k])) * along)
                if quad is not None:
                    kept = self._read_at(image, quad)
                    return False if kept is None else kept
        return False

    def _window(self, image: np.ndarray) -> tuple[int, int, int, int] | None:
        """The window (``x0, y0, x1, y1`` in ``image``) round the last frame's card, its
        corners on the reduced frame's pixel grid (so that its reduction is the whole
        region's reduction there, pixel for pixel); ``None`` if there is no last card, the
        region changed size, or the window would be most of the region."""
        if not TRACK or self._place is None:
            return None
        shape, quad = self._place
        if shape != image.shape:
            return None
        h, w = image.shape[:2]
        step = self._step
        reach = TRACK_REACH * float(side_lengths(quad).max())
        # Its size in steps of TRACK_SIZE (the table's light is fitted once per size, see
        # locate._border_fit), centred on the card, moved rather than cut at the region's
        # edges: the same size from frame to frame of a pass.
        size = np.ceil((np.ptp(quad, axis=0) + 2 * reach) / TRACK_SIZE).astype(int) * TRACK_SIZE
        bw, bh = min(int(size[0]), w - w % step), min(int(size[1]), h - h % step)
        cx, cy = quad.mean(axis=0)
        x0 = min(max(round((cx - bw / 2) / step) * step, 0), w - w % step - bw)
        y0 = min(max(round((cy - bh / 2) / step) * step, 0), h - h % step - bh)
        x1, y1 = x0 + bw, y0 + bh
        if bw < 16 * step or bh < 16 * step:
            return None
        if (x1 - x0) * (y1 - y0) > TRACK_MOST * w * h:
            return None
        return x0, y0, x1, y1

    def _tracked(self, image: np.ndarray) -> FrameRead | None:
        """The card read in a window round where the last frame showed it, if it is found
        there whole and read confidently; ``None`` otherwise (the whole region is searched,
        as if the window had not been tried).

        The window's own border stands for the region's: the table's light is fitted to
        it, and what touches it is table or a card reaching out (see
        :meth:`Locator._search`). A card found near a side of the window that is not the
        region's, or one read weakly, disputed or as another card than the frames before
        (see :meth:`_agrees`), is left to the whole region's search."""
        if self._code is None or self._contested:
            return None
        box = self._window(image)
        if box is None:
            return None
        x0, y0, x1, y1 = box
        h, w = image.shape[:2]
        step = self._step
        locator = self._windows.get((y1 - y0, x1 - x0))
        if locator is None:
            if len(self._windows) > 64:
                self._windows.clear()
            # Card-sized is the same size as in the whole region: the minimum share of
            # the window a card covers is the region's minimum share, scaled.
            base = self.locator
            locator = self._windows[(y1 - y0, x1 - x0)] = base.within(
                w * h / ((x1 - x0) * (y1 - y0))
            )
        outline = locator.find(image[y0:y1, x0:x1])
        if outline.quad is None:
            return None
        quad = outline.quad + np.array([x0, y0], np.float32)
        qx0, qy0 = quad.min(axis=0)
        qx1, qy1 = quad.max(axis=0)
        if (
            (x0 > 0 and qx0 - x0 < TRACK_EDGE)
            or (y0 > 0 and qy0 - y0 < TRACK_EDGE)
            or (x1 < w - w % step and x1 - qx1 < TRACK_EDGE)
            or (y1 < h - h % step and y1 - qy1 < TRACK_EDGE)
        ):
            return None
        return self._read_at(image, quad)

    def _read_at(self, image: np.ndarray, quad: np.ndarray) -> FrameRead | None:
        """The card read on ``quad`` where it is followed (the outline followed or found in the
        window), remembered there, if the read is kept (see :meth:`_agrees`); else ``None``."""
        read = read_outline(self.calibration, image, quad)
        if not self._agrees(read):
            return None
        self._remember(image, quad, read)
        return FrameRead(True, read)

    def read_frame(self, frame: np.ndarray) -> FrameRead:
        """What ``frame`` shows in the region of interest: the card looked for first round
        where the last frame showed it (see :meth:`_tracked`), then in the whole region."""
        image = frame
        if self.roi is not None:
            x, y, w, h = self.roi
            if x + w > frame.shape[1] or y + h > frame.shape[0]:
                raise RoiError(
                    f"region {x},{y},{w},{h} does not fit a {frame.shape[1]}x{frame.shape[0]} frame"
                )
            image = frame[y : y + h, x : x + w]
        followed = self._followed(image)
        if isinstance(followed, FrameRead):
            return followed
        tracked = None if followed else self._tracked(image)
        if tracked is not None:
            return tracked
        self.searches += 1
        found, quad = self._search(image)
        self._remember(image, quad, found.read)
        return found

    def _search(self, image: np.ndarray) -> tuple[FrameRead, np.ndarray | None]:
        """The whole region searched and read: the frame's read, and the quad of the card
        found (``None``: no whole card)."""
        outline = self.locator.find(image)
        quad = outline.quad
        read = None if quad is None else read_outline(self.calibration, image, quad)
        read_on = quad  # the outline the read kept was read on
        weak = read is None or (read.confidence < WEAK and not read.disputed)
        if outline.present and weak:
            # A court figure that reaches the card's edge can cut its paper so
            # that no outline found from the paper is the card's (or a piece of
            # it is taken for the card): the slower search that also follows
            # the card's silhouette is tried then, and kept if it reads better.
            again = self._thorough.find(image, prior=outline)
            if again.quad is not None and (
                outline.quad is None or not np.allclose(again.quad, outline.quad, atol=1.0)
            ):
                other = read_outline(self.calibration, image, again.quad)
                if read is None or other.confidence > read.confidence:
                    read, read_on = other, again.quad
            if read is None or (read.confidence < WEAK and not read.disputed):
                # Still not read: a hand beside a court figure has been seen to make a
                # piece of the card, or a quad turned across it, the best borne out by
                # edges, the card's own outline among the others found. Those are read
                # too, best borne out first, and kept if they read better.
                read, read_on = self._other_outlines(
                    image, again, [outline.quad, again.quad], (read, read_on)
                )
            if BESIDE_AGAIN and (read is None or (read.confidence < WEAK and not read.disputed)):
                # Still not read: a hand's edge, or a glare spot beside it, can pull a side
                # of an outline the snap bears out 8-30 px off the card, the index then
                # read as another rank. Its sides are found again beside the hand.
                read, read_on = self._beside_outlines(
                    image, [outline.quad, again.quad], (read, read_on)
                )
            if outline.quad is None:
                quad = again.quad
        if read is None:
            return FrameRead(outline.present, None, outline.why), quad
        return FrameRead(True, read), read_on if TRACK_READ_ON else quad
