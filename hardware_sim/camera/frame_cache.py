"""Generated camera frames kept on disk, so a benchmark run pays only for reading them.

Drawing a studio frame costs about 50 ms of CPU, reading it about 5: a benchmark that
re-reads the same passes after each change to the reader spends nine tenths of its time
drawing what it drew last time. A pass is kept as the JPEG bytes the scene itself
compressed (decoded, the very frame it returned), the card's quads, the card shown and the
random state after the pass, so the next pass is drawn from the same state whether this
one came from the disk or was drawn anew: a run with the cache gives the frames of a run
without it.

Entries are named by everything the frames depend on: the deck's face files, a digest of
this package's sources (a changed scene draws anew, never reads stale frames), the level,
the seed, the frames per pass and the pass's number. Each is written to a temporary file
and moved into place (``os.replace``), so parallel runs sharing the folder never read half
a file; an entry that cannot be read is drawn again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from hardware_sim.camera.faces import CardDesign, all_codes
from hardware_sim.camera.published import CHECK_DECKS, DECKS, render_deck

SOURCES = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the scene generator's sources (``hardware_sim/camera/*.py``)."""
    h = hashlib.sha256()
    for path in sorted(SOURCES.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@lru_cache(maxsize=64)
def deck_digest(deck: str | CardDesign) -> str:
    """A digest of the deck's faces: a published deck's rendered files, a drawn design's
    parameters (its drawing is in the sources)."""
    h = hashlib.sha256()
    if isinstance(deck, str) and (deck in DECKS or deck in CHECK_DECKS):
        folder = render_deck(deck)
        for code in all_codes():
            h.update(code.encode() + b"\0" + (folder / f"{code}.png").read_bytes())
    else:
        h.update(repr(deck).encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Pass:
    """One pass: the card shown, its frames and the card's quad in each."""

    code: str
    frames: list[np.ndarray]
    quads: np.ndarray


Draw = Callable[[list[bytes]], Pass]
"""Draws a pass from the caller's random generator, appending each frame's JPEG to the list."""


def deck_folder(root: Path, deck: str | CardDesign) -> Path:
    name = deck if isinstance(deck, str) else "design"
    return root / f"{name}-{deck_digest(deck)}" / f"src-{source_digest()}"


class FrameCache:
    """The passes of one deck, level, seed and pass length under ``root``."""

    def __init__(
        self, root: Path, deck: str | CardDesign, level: str, seed: int, frames: int
    ) -> None:
        self.folder = deck_folder(root, deck) / f"{level}-s{seed}-f{frames}"
        self.hits = 0
        self.misses = 0

    def _path(self, k: int) -> Path:
        return self.folder / f"p{k:05d}.npz"

    def get(self, k: int, rng: np.random.Generator, draw: Draw) -> Pass:
        """Pass ``k``: from the disk (``rng`` then set to the state the drawing left), or
        drawn by ``draw`` from ``rng`` and kept."""
        kept = self._load(k, rng)
        if kept is not None:
            self.hits += 1
            return kept
        self.misses += 1
        jpegs: list[bytes] = []
        drawn = draw(jpegs)
        if len(jpegs) == len(drawn.frames):  # a level without compression is not kept
            self._store(k, drawn, jpegs, rng)
        return drawn

    def _load(self, k: int, rng: np.random.Generator) -> Pass | None:
        path = self._path(k)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(z["meta"].tobytes().decode())
                frames = []
                for i in range(int(meta["frames"])):
                    img = cv2.imdecode(z[f"j{i}"], cv2.IMREAD_COLOR)
                    if img is None:
                        return None
                    frames.append(img)
                quads = np.array(z["quads"])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        rng.bit_generator.state = meta["state"]
        return Pass(str(meta["code"]), frames, quads)

    def _store(self, k: int, drawn: Pass, jpegs: list[bytes], rng: np.random.Generator) -> None:
        meta = {"code": drawn.code, "frames": len(jpegs), "state": rng.bit_generator.state}
        arrays = {f"j{i}": np.frombuffer(b, np.uint8) for i, b in enumerate(jpegs)}
        arrays["quads"] = np.asarray(drawn.quads, np.float32)
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".p", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                np.savez(out, **arrays)  # type: ignore[arg-type]
            os.replace(tmp, self._path(k))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def cached_folder(target: Path, fill: Callable[[Path], object]) -> Path:
    """``target``, filled by ``fill`` into a temporary folder beside it and moved into
    place whole, unless it is there already (another process may have filled it first)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        fill(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # filled meanwhile by another process: keep theirs
            if not target.is_dir():
                raise
    finally:
        if tmp.exists():
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    return target
