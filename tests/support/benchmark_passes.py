"""The camera benchmark's studio passes, drawn again in a test (issue 37).

``benchmarks/camera.py`` draws each pass's card and frames from one random generator per
deck; a test that keeps the generator's state at the moment a pass's card was drawn gets
that pass's very frames back, and calibrates the deck as the benchmark does. The tests
taken from benchmark passes (the reader's, the locator's) share these, so a pass reads
the same in every test that names it."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hardware_sim.camera.decks import face
from hardware_sim.camera.published import CHECK_DECKS, DECKS
from hardware_sim.camera.scene import LEVELS, card_pass
from hardware_sim.camera.synth import write_calibration_set
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.learn import calibrate
from shoe_reader.camera.locate import Locator, Outline
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.voting import Voter, VotingRules
from shoe_reader.events import ReaderEvent
from tests.support.run_shared import shared_calibration

SEED = 2024  # benchmarks/camera.py's default


def calibrated(
    deck: str, tmp_path_factory: pytest.TempPathFactory, seed: int = SEED
) -> Calibration:
    """``deck`` calibrated as the benchmark calibrates it (its seed, a grey mat; ``seed``: the
    benchmark's ``--seed``).

    Made once a test run and shared (see :mod:`tests.support.run_shared`): a dozen tests ask
    for the same few decks, in every xdist worker. Each call still gets a calibration of its
    own, the very one ``calibrate`` returned. The photographs are written as BMP, the same
    pixels as the benchmark's PNG without the compression (3 s of CPU a deck), and removed
    once calibrated. Made by whichever test asks first, it is made with the reader's
    switches as they are then: a test asks before it turns any off."""
    seed += [*DECKS, *CHECK_DECKS].index(deck)

    def make() -> Calibration:
        photos: Path = tmp_path_factory.mktemp(f"{deck}-photos")
        write_calibration_set(deck, photos, seed=seed, backdrop="grey", suffix=".bmp")
        cal, problems = calibrate(photos)
        assert problems == []
        shutil.rmtree(photos)
        return cal

    return shared_calibration(tmp_path_factory, f"calibrated-{deck}-s{seed}", make)


def pass_frames(
    deck: str, k: int, card: str, state: int, inc: int, carry: int | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pass ``k``'s frames (``card`` of ``deck``), each with the card's quad as it was
    drawn, from the PCG64 ``state`` and ``inc`` the benchmark's generator had once it drew
    the card (``carry``: its kept uint32, if it had one)."""
    rng = np.random.default_rng()
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": state, "inc": inc},
        "has_uint32": int(carry is not None),
        "uinteger": carry or 0,
    }
    table = ("felt", "dark", "wood", "light", "grey")[k % 5]
    return card_pass(face(deck, card), LEVELS["studio"], rng, table, 8)


def vote(
    rec: Recognizer, frames: list[np.ndarray], rules: VotingRules | None = None
) -> list[ReaderEvent]:
    """What the camera reports for these frames of one pass (``rules``: the voter's, if not
    the default ones)."""
    voter = Voter("camera", rules)
    events: list[ReaderEvent] = []
    for i, frame in enumerate(frames):
        events += voter.feed(i, rec.read_frame(frame))
    return events + voter.finish()


def confident_codes(rec: Recognizer, frames: list[np.ndarray]) -> list[str]:
    """The cards of the frames read with the confidence the voter counts (0.5), in order:
    what a pass's tests compare with the card shown, a wrong card among them being a
    confident misread."""
    reads = [rec.read_frame(f).read for f in frames]
    return [r.code for r in reads if r is not None and r.code and r.confidence >= 0.5]


def corner_error(found: np.ndarray | None, drawn: np.ndarray) -> float:
    """The farthest a corner of ``found`` lies from the drawn quad's (in any corner order)."""
    if found is None:
        return np.inf
    turns = [np.roll(q, r, axis=0) for q in (drawn, drawn[::-1]) for r in range(4)]
    return min(float(np.abs(found - q).max()) for q in turns)


def located(frame: np.ndarray, aspect: float) -> tuple[Outline, Outline, Locator]:
    """The reader's two looks at a frame (the quick locator, then the thorough one from
    its outline), for a deck of this ``aspect``: both outlines and the thorough locator,
    whose other outlines a test may look at."""
    thorough = Locator(aspect=aspect, thorough=True, refine=True)
    first = Locator(aspect=aspect).find(frame)
    return first, thorough.find(frame, prior=first), thorough
