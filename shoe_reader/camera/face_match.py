"""The whole face of a straightened card against every face of the calibrated deck.

A corner index is a few millimetres of print; at the size a camera over the
shoe sees a card, a small spade and a small club, or a 6 and an 8, are a
handful of pixels apart. The whole face says far more: the pips' number and
layout, their shapes repeated many times, the court figure (and on decks whose
court cards carry no index at all, only the figure tells a jack from a king).
So each calibrated face is kept whole, at a small size where blur, noise and
compression average out, and a frame is read as the face it is clearly nearer
than any other face of the deck.

The features are ink and chroma relative to the card's own paper, less their
local average (a high-pass): white balance, exposure and a light gradient
across the card cancel, and what is compared is the print.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from shoe_reader.camera import kernels
from shoe_reader.camera.index import NoIndex

FACE_W = 40
FACE_H = 56
"""Size of a face's features (a fifth of the straightened card)."""
MARGIN = 2
"""Feature pixels left out at each edge (a sliver of table, a printed outline)."""
NOISE_GAP = 2.0
"""How many times the frame's own distance from its face the gap to another face counts as."""
SOFTER_COPIES = 2
"""Copies of each calibrated face, sharp then softened, alternating (see
``calibration.FACE_SOFTER``)."""
HIGH_PASS = 4.0
"""Sigma (feature pixels) of the local average taken out of the features."""


def face_features(card: np.ndarray) -> np.ndarray:
    """Ink and chroma maps of a straightened face (BGR), float32 (FACE_H, FACE_W, 3)."""
    small = cv2.resize(card, (FACE_W, FACE_H), interpolation=cv2.INTER_AREA)
    maps, paper = kernels.ink_maps(small, 90.0)  # ink_and_chroma against the paper
    if float(paper.min()) < 40:
        raise NoIndex("card too dark to read")
    high_passed: np.ndarray = maps - cv2.GaussianBlur(maps, (0, 0), HIGH_PASS)
    return high_passed


def as_vector(maps: np.ndarray) -> np.ndarray:
    """The compared part of one face's (or a stack of faces') features, unit length."""
    inner = maps[..., MARGIN:-MARGIN, MARGIN:-MARGIN, :]
    # (the reshape of the inner part copies it already; float32 maps are not copied again)
    flat = inner.reshape(*maps.shape[:-3], -1).astype(np.float32, copy=False)
    unit: np.ndarray = flat / np.maximum(np.linalg.norm(flat, axis=-1, keepdims=True), 1e-6)
    return unit


@dataclass(frozen=True)
class FaceMatch:
    """The face a frame is nearest, how near (``fit``), and how clearly (``separation``).

    Separation: of the gap between the best face and any face of another card,
    the share by which the frame lies on the best one's side (1: exactly the
    best face; 0: half-way; negative: nearer the other).
    """

    code: str
    fit: float
    separation: float
    runner_up: str


@dataclass(frozen=True)
class FaceBook:
    """Every calibrated face, as unit vectors, with how alike the deck's faces are."""

    codes: tuple[str, ...]  # the distinct cards
    owner: np.ndarray  # (n,) index into codes of each template
    templates: np.ndarray  # (n, D) unit vectors
    pairs: np.ndarray  # (k, k) most alike templates of two cards (cosine)
    starts: np.ndarray  # (k,) first template of each card

    @classmethod
    def learn(cls, labels: tuple[str, ...], maps: np.ndarray) -> FaceBook:
        codes = tuple(sorted(set(labels)))
        owner = np.array([codes.index(c) for c in labels])
        order = np.argsort(owner, kind="stable")  # each card's templates together
        owner = owner[order]
        templates = as_vector(maps[order])
        sims = templates @ templates.T
        k = len(codes)
        pairs = np.full((k, k), -1.0, np.float32)
        for a in range(k):
            rows = sims[owner == a]
            for b in range(k):
                pairs[a, b] = rows[:, owner == b].max()
        starts = np.searchsorted(owner, np.arange(k))
        return cls(codes, owner, templates, pairs, starts)

    def scores(self, maps: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the frame with each card's nearest template, (k,).

        ``keep`` (FACE_H x FACE_W, 0 or 1): compare only where it is 1, the rest of the
        face being covered (a hand): each template is taken over the same pixels.
        """
        if keep is None:
            found = self.templates @ as_vector(maps)
        else:
            mask = np.repeat(keep[MARGIN:-MARGIN, MARGIN:-MARGIN, None], maps.shape[-1], axis=2)
            mask = mask.ravel().astype(np.float32)
            x = as_vector(maps) * mask
            x /= max(float(np.linalg.norm(x)), 1e-6)
            found = kernels.masked_cosines(self.templates, x, mask)
        return np.maximum.reduceat(found, self.starts)

    def blurred(self, maps: np.ndarray, card: int, keep: np.ndarray | None = None) -> bool:
        """Whether the frame is nearer a softened template of ``card`` than its sharp ones.

        Each face is calibrated sharp and softened (``FACE_SOFTER``, alternating within a
        card's templates): a frame nearer the softened copy of its own face is blurred,
        whatever deck it is of (another deck's face, sharp, is nearer the sharp copy).
        """
        lo = int(self.starts[card])
        hi = int(self.starts[card + 1]) if card + 1 < len(self.starts) else len(self.owner)
        if keep is None:
            found = self.templates[lo:hi] @ as_vector(maps)
        else:
            mask = np.repeat(keep[MARGIN:-MARGIN, MARGIN:-MARGIN, None], maps.shape[-1], axis=2)
            found = self.templates[lo:hi] @ (as_vector(maps) * mask.ravel())
        return bool(int(np.argmax(found)) % SOFTER_COPIES)

    def contest(self, maps: np.ndarray) -> tuple[int, float, np.ndarray]:
        """The nearest card, its fit, and its share (see :class:`FaceMatch`) against each card.

        The card's own share is ``+inf`` so that a minimum over the array is
        taken over the other cards only.
        """
        per_card = self.scores(maps)
        best = int(np.argmax(per_card))
        return best, float(per_card[best]), self.shares(per_card, best)

    def shares(self, per_card: np.ndarray, best: int) -> np.ndarray:
        """Card ``best``'s share against each card, given each card's cosine with the frame."""
        # Two faces closer to each other than the frame is to its own best face
        # cannot be told apart by it: the gap a frame must cross is at least its
        # own distance from the face (blur, noise, a fingertip, the outline a
        # little off), not only the distance between the faces.
        own = NOISE_GAP * (1.0 - float(per_card[best]))
        gap = np.maximum(1.0 - self.pairs[best], max(own, 1e-6))
        share: np.ndarray = (per_card[best] - per_card) / gap
        share[best] = np.inf
        return share

    def match(self, maps: np.ndarray) -> FaceMatch:
        best, fit, share = self.contest(maps)
        if len(self.codes) < 2:
            return FaceMatch(self.codes[best], fit, 0.0, "")
        runner = int(np.argmin(share))
        return FaceMatch(self.codes[best], fit, float(share[runner]), self.codes[runner])
