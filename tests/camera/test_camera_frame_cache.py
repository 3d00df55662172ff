"""The benchmark's frame cache gives the frames a run without it draws, pixel for pixel.

A cached pass must also leave the random generator where drawing it would have, or every
later pass of the run would show other cards than a run without the cache.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hardware_sim.camera.decks import face
from hardware_sim.camera.faces import all_codes
from hardware_sim.camera.frame_cache import Draw, FrameCache, Pass, cached_folder
from hardware_sim.camera.scene import LEVELS, card_pass, photograph

DECK = "classic"
FRAMES = 3


def _draw(rng: np.random.Generator, level: str) -> Draw:
    def draw(jpegs: list[bytes]) -> Pass:
        code = all_codes()[int(rng.integers(52))]
        if level == "studio":
            shots = card_pass(face(DECK, code), LEVELS[level], rng, "felt", FRAMES, jpegs)
        else:
            shots = [photograph(face(DECK, code), LEVELS[level], rng, "wood", jpegs)]
        return Pass(code, [f for f, _q in shots], np.array([q for _f, q in shots]))

    return draw


def _run(level: str, cache: Path | None, passes: int = 3) -> tuple[list[Pass], FrameCache | None]:
    rng = np.random.default_rng(7)
    kept = FrameCache(cache, DECK, level, 7, FRAMES) if cache is not None else None
    out = []
    for k in range(passes):
        draw = _draw(rng, level)
        out.append(draw([]) if kept is None else kept.get(k, rng, draw))
    return out, kept


def _same(a: list[Pass], b: list[Pass]) -> None:
    assert [p.code for p in a] == [p.code for p in b]
    for p, q in zip(a, b, strict=True):
        assert len(p.frames) == len(q.frames)
        for f, g in zip(p.frames, q.frames, strict=True):
            assert np.array_equal(f, g)
        assert np.allclose(p.quads, q.quads, atol=1e-3)


def test_cached_passes_are_the_drawn_passes_and_the_run_goes_on_alike(tmp_path: Path) -> None:
    for level in ("studio", "moderate"):
        drawn, _ = _run(level, None)
        cold, kept = _run(level, tmp_path)
        assert kept is not None and (kept.hits, kept.misses) == (0, 3)
        _same(drawn, cold)
        warm, kept = _run(level, tmp_path)
        assert kept is not None and (kept.hits, kept.misses) == (3, 0)
        _same(drawn, warm)
        # A pass missing in the middle is drawn from the state the pass before it left.
        (kept.folder / "p00001.npz").unlink()
        mixed, kept = _run(level, tmp_path)
        assert kept is not None and (kept.hits, kept.misses) == (2, 1)
        _same(drawn, mixed)


def test_an_entry_that_cannot_be_read_is_drawn_again(tmp_path: Path) -> None:
    drawn, kept = _run("studio", tmp_path, passes=2)
    assert kept is not None
    (kept.folder / "p00000.npz").write_bytes(b"half a file")
    again, kept = _run("studio", tmp_path, passes=2)
    assert kept is not None and (kept.hits, kept.misses) == (1, 1)
    _same(drawn, again)
    assert not list(kept.folder.glob(".*tmp"))  # no temporary file left behind


def test_a_cached_folder_is_filled_once(tmp_path: Path) -> None:
    calls: list[Path] = []

    def fill(folder: Path) -> None:
        calls.append(folder)
        (folder / "a.txt").write_text("a")

    target = tmp_path / "x" / "photos"
    assert cached_folder(target, fill) == target
    assert cached_folder(target, fill) == target
    assert len(calls) == 1 and (target / "a.txt").read_text() == "a"
    assert [p.name for p in target.parent.iterdir()] == ["photos"]
