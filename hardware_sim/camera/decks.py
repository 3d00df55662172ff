"""Every deck the simulator can photograph, by name: its own drawn designs and published decks."""

from __future__ import annotations

import numpy as np

from hardware_sim.camera.faces import DESIGNS, TEST_ONLY_DESIGNS, CardDesign, render_face
from hardware_sim.camera.published import CHECK_DECKS, DECKS, published_face

Deck = CardDesign | str
"""A drawn design, or the name of a drawn design or of a published deck."""


def known_decks() -> list[str]:
    return [*DESIGNS, *DECKS]


def face(deck: Deck, code: str) -> np.ndarray:
    """The face ``code`` of ``deck``: BGR for a drawn design, BGRA for a published one."""
    if isinstance(deck, CardDesign):
        return render_face(code, deck)
    drawn = DESIGNS.get(deck) or TEST_ONLY_DESIGNS.get(deck)
    if drawn is not None:
        return render_face(code, drawn)
    if deck in DECKS or deck in CHECK_DECKS:
        return published_face(deck, code)
    raise KeyError(f"unknown deck {deck!r}; one of {', '.join(known_decks())}")
