"""Published card designs from Debian packages, rendered into card faces.

The decks are real, published designs with their own fonts, index layouts and
court figures, so the recognizer is developed against what a studio buys and
not against the simulator's own drawings. Nothing is vendored: the SVG files
come from the Debian packages (``.ci/run`` installs them) and are rendered
with librsvg's ``rsvg-convert`` on first use, then cached on disk (once: a process
asking for a deck another one is rendering waits for it and takes its faces).

* ``gnome-cards-data`` (``/usr/share/aisleriot/cards/``), GPL-3+ as stated in
  ``/usr/share/doc/gnome-cards-data/copyright``; one SVG per deck, one element
  per face named ``club_1`` … ``spade_king``.
* ``kdegames-card-data-kf5`` (``/usr/share/carddecks/``), GPL-2+ / LGPL-2 /
  Expat-like per deck as stated in ``/usr/share/doc/kdegames-card-data-kf5/copyright``;
  elements named ``1_club`` … ``king_spade``. Some KDE decks embed each face
  as a bitmap ``<image>``, which librsvg cannot export by id: those faces are
  cut out of a render of the whole sheet at the element's rectangle.

Decks kept aside for an independent acceptance check (``bellot``,
``svg-nicu-white``) are refused here so that nothing is ever tuned on them.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import structlog

from table_service.rules.cards import RANKS, SUITS

GNOME_DIR = Path("/usr/share/aisleriot/cards")
KDE_DIR = Path("/usr/share/carddecks")
FACE_WIDTH = 500
RENDER_VERSION = 4  # part of the cache folder's name: a changed renderer renders anew
"""Rendered face width in pixels (the height follows the deck's own proportions)."""

log = structlog.get_logger(__name__)

_RANK_NAMES = {"A": "1", "T": "10", "J": "jack", "Q": "queen", "K": "king"}
_SUIT_NAMES = {"S": "spade", "H": "heart", "D": "diamond", "C": "club"}
RESERVED = frozenset({"bellot", "svg-nicu-white"})
"""Kept aside for the independent acceptance check: never rendered here."""


class DeckUnavailable(RuntimeError):
    """The deck's package is not installed, or ``rsvg-convert`` is missing."""


@dataclass(frozen=True)
class PublishedDeck:
    name: str
    package: str
    svg: Path
    naming: str  # "gnome": club_1, "kde": 1_club

    def element_id(self, code: str) -> str:
        rank = _RANK_NAMES.get(code[0], code[0])
        suit = _SUIT_NAMES[code[1]]
        return f"{suit}_{rank}" if self.naming == "gnome" else f"{rank}_{suit}"


def _gnome(name: str) -> PublishedDeck:
    return PublishedDeck(name, "gnome-cards-data", GNOME_DIR / f"{name}.svgz", "gnome")


def _kde(folder: str, file: str) -> PublishedDeck:
    return PublishedDeck(folder, "kdegames-card-data-kf5", KDE_DIR / folder / file, "kde")


DECKS: dict[str, PublishedDeck] = {
    d.name: d
    for d in (
        _gnome("anglo"),
        _gnome("anglo_modern"),
        _gnome("neoclassical"),
        _gnome("paris"),
        _gnome("plastic"),
        _gnome("tango"),
        _gnome("simplistic"),
        _gnome("guyenne-classic"),
        _gnome("ancient_french"),
        _kde("svg-standard", "standard.svgz"),
        _kde("svg-gm-paris", "paris.svgz"),
        _kde("svg-jolly-royal", "jolly-royal.svgz"),
        _kde("svg-konqi-modern", "konqi.svgz"),
        _kde("svg-xskat-french", "french.svgz"),
    )
}
"""The development decks (issue 16): every one is calibrated and read in the benchmark."""

CHECK_DECKS: dict[str, PublishedDeck] = {
    d.name: d
    for d in (
        _gnome("anglo_bitmap"),
        _gnome("anglo_modern_4_color"),
        _gnome("anglo_poker"),
        _gnome("dondorf"),
        _gnome("gnomangelo"),
        _gnome("neoclassical_4_color"),
        _gnome("ornamental"),
        _gnome("slavic_costumes"),
        _gnome("tango_nuevo"),
        _gnome("tigullio"),
        _kde("svg-ancient-egyptians", "Ancient_Egyptians.svgz"),
        _kde("svg-dondorf", "dondorf.svgz"),
        _kde("svg-nicu-ornamental", "ornamental.svgz"),
        _kde("svg-oxygen", "oxygen.svgz"),
        _kde("svg-oxygen-air", "oxygen-air.svgz"),
        _kde("svg-oxygen-white", "oxygen-white.svgz"),
        _kde("svg-penguins", "penguins.svgz"),
    )
}
"""The other French-suited decks of the same two packages, outside the development list and
never tuned on: ``benchmarks/camera.py --check`` reads them to show how the reader does on
designs it was not developed against (the reserved decks stay unrendered)."""


def _published(name: str) -> PublishedDeck | None:
    return DECKS.get(name) or CHECK_DECKS.get(name)


def available(name: str) -> bool:
    deck = _published(name)
    return deck is not None and deck.svg.exists() and shutil.which("rsvg-convert") is not None


def _cache_dir() -> Path:
    base = os.environ.get("LIVETABLE_DECK_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "livetable" / "decks"


def _svg_text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _rsvg(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["rsvg-convert", *args], capture_output=True, timeout=120, check=False)


_SVG_NS = "http://www.w3.org/2000/svg"
_XLINK = "{http://www.w3.org/1999/xlink}href"


def _length(text: str | None) -> float | None:
    if not text:
        return None
    value = re.sub(r"[a-z%]+$", "", text.strip())
    try:
        return float(value)
    except ValueError:
        return None


def _viewbox(root: ET.Element) -> tuple[float, float, float, float]:
    """The part of user space the document shows.

    A viewBox of other proportions than the page is centred on it ("xMidYMid
    meet"), so the page shows more than the viewBox along one side: some decks
    put a row of cards there (outside the viewBox, inside the page).
    """
    w, h = _length(root.get("width")), _length(root.get("height"))
    box = root.get("viewBox")
    if not box:
        return 0.0, 0.0, w or 0.0, h or 0.0
    x, y, bw, bh = (float(v) for v in box.replace(",", " ").split())
    if w and h and bw > 0 and bh > 0 and root.get("preserveAspectRatio", "") in ("", "xMidYMid"):
        page = w / h
        if page > bw / bh:
            wider = bh * page
            x, bw = x - (wider - bw) / 2, wider
        elif page < bw / bh:
            taller = bw / page
            y, bh = y - (taller - bh) / 2, taller
    return x, y, bw, bh


def _render(
    root: ET.Element,
    box: tuple[float, float, float, float],
    width: int,
    tmp: Path,
    window: tuple[int, int, int, int] | None = None,
) -> np.ndarray:
    """Render the user-space rectangle ``box`` of ``root`` at ``width`` pixels (BGRA).

    ``window`` (left, top, right, bottom, in pixels of that render) renders only that
    part of it: the document and its scale are the same, only the page is smaller and
    shifted by whole pixels, which is most of the cost saved on a mostly empty sheet.
    """
    x, y, w, h = box
    root.set("viewBox", f"{x:.4f} {y:.4f} {w:.4f} {h:.4f}")
    root.set("width", str(width))
    root.set("height", str(max(1, round(width * h / w))))
    root.set("preserveAspectRatio", "none")
    src, out = tmp / "part.svg", tmp / "part.png"
    src.write_bytes(ET.tostring(root))
    page = []
    if window is not None:
        c0, r0, c1, r1 = window
        page = [
            f"--page-width={c1 - c0}",
            f"--page-height={r1 - r0}",
            f"--left={-c0}",
            f"--top={-r0}",
        ]
    done = _rsvg([*page, str(src), "-o", str(out)])
    if done.returncode != 0:
        raise DeckUnavailable(f"rsvg-convert failed: {done.stderr.decode().strip()}")
    image = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
    if image is None or image.ndim != 3 or image.shape[2] != 4:
        raise DeckUnavailable("rsvg-convert gave no RGBA image")
    return image


def _grid_faces(svg: bytes, codes: list[str], tmp: Path) -> dict[str, np.ndarray]:
    """GNOME decks: aisleriot lays a deck out in 13 columns (A..K) by 5 rows (C, D, H, S, more)."""
    root = ET.fromstring(svg)
    x, y, w, h = _viewbox(root)
    width = FACE_WIDTH * 13
    height = max(1, round(width * h / w))  # as _render sizes the sheet
    cw, ch = width / 13, height / 5
    # The fifth row (jokers, backs) is left out of the render: a fifth of its cost.
    sheet = _render(root, (x, y, w, h), width, tmp, (0, 0, width, round(4 * ch)))
    rows = {"C": 0, "D": 1, "H": 2, "S": 3}
    faces = {}
    for code in codes:
        c, r = RANKS.index(code[0]), rows[code[1]]
        cell = sheet[round(r * ch) : round((r + 1) * ch), round(c * cw) : round((c + 1) * cw)]
        ys, xs = np.nonzero(cell[..., 3] > 128)  # some decks leave a margin in the cell
        faces[code] = cell[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    return faces


_RENDER_THREADS = 2
"""Faces of a KDE deck rendered at once. The work is in ``rsvg-convert`` (threads waiting
on it release the GIL), so a second core shortens a cold render by about a third when it
is free, as it is while another test worker waits on this deck's lock; the CPU spent is
the same. Two, for the two cores CI has."""


def _element_faces(
    svg: bytes, deck: PublishedDeck, codes: list[str], tmp: Path
) -> dict[str, np.ndarray]:
    """KDE decks: each face is an element; render it alone and cut it at its visible extent.

    Only the element and what it references are kept (referenced elements move
    into ``<defs>``: a ``use`` clone never inherits its original's ancestors), so the
    opaque card itself is all that is drawn and its alpha gives its bounds.
    """
    root = ET.fromstring(svg)
    parents = {child: parent for parent in root.iter() for child in parent}
    by_id = {el.get("id"): el for el in root.iter() if el.get("id")}
    referenced = {
        v[1:]
        for el in root.iter()
        for v in [el.get(_XLINK) or el.get("href") or ""]
        if v.startswith("#")
    }
    defs = [el for el in root if el.tag.endswith("defs")]
    extra = ET.Element(f"{{{_SVG_NS}}}defs")
    for ref in sorted(referenced):
        el = by_id.get(ref)
        if el is not None and not any(d in _ancestors(el, parents) for d in defs):
            extra.append(el)
    box0 = _viewbox(root)
    alone: dict[str, ET.Element] = {}
    for code in codes:
        element = by_id.get(deck.element_id(code))
        if element is None:
            raise DeckUnavailable(f"{deck.name}: no element {deck.element_id(code)}")
        chain = [element]
        while chain[-1] in parents and parents[chain[-1]] is not root:
            chain.append(parents[chain[-1]])
        doc = ET.Element(root.tag, dict(root.attrib))
        for d in defs:
            doc.append(d)
        doc.append(extra)
        node = doc
        for anc in reversed(chain[1:]):
            copy = ET.SubElement(node, anc.tag, dict(anc.attrib))
            node = copy
        node.append(element)
        alone[code] = _pruned(doc)

    def cut(code: str) -> np.ndarray:
        own = tmp / code  # the faces render at once: each in its own folder
        own.mkdir()
        bx0, by0, bx1, by1 = _extent(alone[code], box0, own, f"{deck.name}: {code}")
        face = _render(alone[code], (bx0, by0, bx1 - bx0, by1 - by0), FACE_WIDTH, own)
        ys, xs = np.nonzero(face[..., 3] > 128)
        return face[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]

    with ThreadPoolExecutor(_RENDER_THREADS) as pool:
        try:
            return dict(zip(codes, pool.map(cut, codes), strict=True))
        except BaseException:
            pool.shutdown(cancel_futures=True)  # one face failed the deck: render no more
            raise


_EXTENT_WIDTH = 1600
"""Width of the renders the extent is measured on (the final crop's margin depends on it)."""
_COARSE = 8
"""The coarse pass that finds where the drawing lies is this many times narrower."""


def _extent(
    root: ET.Element, box0: tuple[float, float, float, float], tmp: Path, what: str
) -> tuple[float, float, float, float]:
    """The user-space extent of what ``root`` draws, found on coarse renders.

    Some decks lay faces out beyond the document's own view box (a face there renders
    cut, or empty), so the box grows towards every edge the drawing touches, or around
    itself when nothing shows, until the drawing lies inside it.
    """
    x, y, w, h = box0
    near = None
    for _ in range(8):
        found = _drawn(root, (x, y, w, h), tmp, near)
        if found is None:
            x, y, w, h = x - w, y - h, 3 * w, 3 * h
            near = None
            continue
        (x0, y0, x1, y1), (rows, cols) = found
        sx, sy = w / cols, h / rows
        left, top = x0 == 0, y0 == 0
        right, bottom = x1 == cols - 1, y1 == rows - 1
        if not (left or top or right or bottom):
            return (
                x + (x0 - 0.5) * sx,
                y + (y0 - 0.5) * sy,
                x + (x1 + 1.5) * sx,
                y + (y1 + 1.5) * sy,
            )
        seen = (x + x0 * sx, y + y0 * sy, x + (x1 + 1) * sx, y + (y1 + 1) * sy)
        x, w = x - w * left, w * (1 + left + right)
        y, h = y - h * top, h * (1 + top + bottom)
        # The drawing goes on past the sides it touched: next, look from where it was
        # seen out to the grown box's edge on those sides.
        near = (
            x if left else seen[0],
            y if top else seen[1],
            x + w if right else seen[2],
            y + h if bottom else seen[3],
        )
    raise DeckUnavailable(f"{what} renders empty or without bounds")


def _drawn(
    root: ET.Element,
    box: tuple[float, float, float, float],
    tmp: Path,
    near: tuple[float, float, float, float] | None = None,
) -> tuple[tuple[int, int, int, int], tuple[int, int]] | None:
    """The pixels (first and last column and row) where the render of ``box`` at
    ``_EXTENT_WIDTH`` is more than faintly drawn, and that render's size; None if nowhere.

    A face covers a small part of its deck's sheet, and rendering (and encoding, and
    reading back) the whole sheet at full width cost most of a cold render: a coarse
    render finds where the face lies (unless ``near``, a user-space rectangle, says so
    already), and only a window round it is rendered at full width, on the same pixel
    grid. Should the drawing reach the window's side (or the coarse render show
    nothing) the whole sheet is rendered, as before.
    """
    x, y, w, h = box
    cols = _EXTENT_WIDTH
    rows = max(1, round(cols * h / w))
    if near is None:
        coarse = _render(root, box, cols // _COARSE, tmp)
        ys, xs = np.nonzero(coarse[..., 3])
        if len(xs):
            sx, sy = w / coarse.shape[1], h / coarse.shape[0]
            near = (
                x + xs.min() * sx,
                y + ys.min() * sy,
                x + (xs.max() + 1) * sx,
                y + (ys.max() + 1) * sy,
            )
    if near is not None:
        c0 = max(0, math.floor((near[0] - x) * cols / w) - _COARSE)
        r0 = max(0, math.floor((near[1] - y) * rows / h) - _COARSE)
        c1 = min(cols, math.ceil((near[2] - x) * cols / w) + 1 + _COARSE)
        r1 = min(rows, math.ceil((near[3] - y) * rows / h) + 1 + _COARSE)
        if c1 > c0 and r1 > r0:
            part = _render(root, box, cols, tmp, (c0, r0, c1, r1))
            ys, xs = np.nonzero(part[..., 3] > 8)
            inside = (
                len(xs) > 0
                and (xs.min() > 0 or c0 == 0)
                and (ys.min() > 0 or r0 == 0)
                and (xs.max() < c1 - c0 - 1 or c1 == cols)
                and (ys.max() < r1 - r0 - 1 or r1 == rows)
            )
            if inside:
                bounds = (
                    int(xs.min()) + c0,
                    int(ys.min()) + r0,
                    int(xs.max()) + c0,
                    int(ys.max()) + r0,
                )
                return bounds, (rows, cols)
    whole = _render(root, box, cols, tmp)
    ys, xs = np.nonzero(whole[..., 3] > 8)
    if len(xs) == 0:
        return None
    return (int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())), whole.shape[:2]


_URL = re.compile(r"""url\(\s*['"]?#([^)'"\s]+)""")


def _references(el: ET.Element) -> set[str]:
    """The ids ``el`` itself refers to: a link (``use``, a gradient's template) or a
    ``url(#id)`` in any attribute (fill, clip-path, filter, marker, a style attribute)."""
    found = set()
    for key, value in el.attrib.items():
        if key in (_XLINK, "href") and value.startswith("#"):
            found.add(value[1:])
        if "url(" in value:
            found.update(_URL.findall(value))
    return found


def _pruned(alone: ET.Element) -> ET.Element:
    """``alone`` with only what its drawing needs in its ``<defs>``.

    A face's document carried all of its deck's definitions (some decks have most of a
    megabyte of them), parsed on every render of every face. Only the definitions the
    drawn part refers to, and what they refer to in turn, are kept, with their ancestors
    (whose properties they inherit), in the same order: nothing in ``<defs>`` draws
    unless referred to, so the render is the same. A document with a ``<style>`` sheet
    (whose selectors might count siblings) is left whole.
    """
    if any(el.tag == f"{{{_SVG_NS}}}style" for el in alone.iter()):
        return alone
    parents = {child: parent for parent in alone.iter() for child in parent}
    by_id: dict[str, list[ET.Element]] = {}
    for el in alone.iter():
        ident = el.get("id")
        if ident:
            by_id.setdefault(ident, []).append(el)
    defs = [el for el in alone if el.tag == f"{{{_SVG_NS}}}defs"]
    todo = [alone, *(el for child in alone if child not in defs for el in child.iter())]
    needed: set[str] = set()
    while todo:
        for ref in _references(todo.pop()) - needed:
            needed.add(ref)
            for target in by_id.get(ref, []):
                todo.extend(target.iter())
                todo.extend(_ancestors(target, parents))

    def kept(el: ET.Element) -> ET.Element | None:
        if el.get("id") in needed:
            return el
        children = [k for k in map(kept, el) if k is not None]
        if not children:
            return None
        copy = ET.Element(el.tag, dict(el.attrib))
        copy.text = el.text
        copy.extend(children)
        return copy

    out = ET.Element(alone.tag, dict(alone.attrib))
    for child in alone:
        keep = kept(child) if child in defs else child
        if keep is not None:
            out.append(keep)
    return out


def _ancestors(el: ET.Element, parents: dict[ET.Element, ET.Element]) -> list[ET.Element]:
    out = []
    while el in parents:
        el = parents[el]
        out.append(el)
    return out


def render_deck(name: str, cache: Path | None = None) -> Path:
    """Render every face of ``name`` to ``<cache>/<deck>/<code>.png`` (BGRA); returns the folder."""
    if name in RESERVED:
        raise DeckUnavailable(f"{name} is kept aside for the independent acceptance check")
    deck = _published(name)
    if deck is None:
        raise DeckUnavailable(f"unknown deck {name!r}; one of {', '.join(DECKS)}")
    if shutil.which("rsvg-convert") is None:
        raise DeckUnavailable("rsvg-convert not found (Debian package librsvg2-bin)")
    if not deck.svg.exists():
        raise DeckUnavailable(f"{deck.svg} not found (Debian package {deck.package})")
    svg = _svg_text(deck.svg)
    folder = _folder(name, svg, cache)
    codes = [r + s for s in SUITS for r in RANKS]
    if _rendered(folder, codes):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with _deck_lock(folder):
        if _rendered(folder, codes):  # rendered by whoever held the lock
            return folder
        with tempfile.TemporaryDirectory() as tmp:
            faces = (
                _grid_faces(svg, codes, Path(tmp))
                if deck.naming == "gnome"
                else _element_faces(svg, deck, codes, Path(tmp))
            )
            for code, face in faces.items():
                # Named for this process and thread, and moved into place whole: a
                # reader that does not take the lock never sees half a face.
                part = folder / f".{code}.{os.getpid()}-{threading.get_ident()}.tmp.png"
                cv2.imwrite(str(part), face)
                part.replace(folder / f"{code}.png")
    return folder


def _folder(name: str, svg: bytes, cache: Path | None) -> Path:
    """The deck's folder in the cache, named for its SVG's content and the renderer."""
    digest = hashlib.sha256(svg).hexdigest()[:12]
    return (cache or _cache_dir()) / f"{name}-{digest}-{FACE_WIDTH}-r{RENDER_VERSION}"


def _rendered(folder: Path, codes: list[str]) -> bool:
    return all((folder / f"{c}.png").exists() for c in codes)


@contextmanager
def _deck_lock(folder: Path) -> Iterator[None]:
    """Hold the deck's render lock (``<folder>.lock`` beside it) while inside.

    Parallel test workers, their subprocesses and two readers starting at once ask for
    the same deck: without the lock each rendered it whole (a KDE deck is seconds of
    CPU), though only one result is kept. ``flock`` also holds between threads (each
    opens the file anew), and the kernel drops it when its holder dies, so a killed
    renderer never leaves the deck locked. The lock file stays: removing it would let
    a process that has just opened it lock a file no one else sees.
    """
    with open(folder.with_name(f"{folder.name}.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info(
                "published.render_waiting",
                deck=folder.name,
                reason="another process is rendering it",
            )
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@lru_cache(maxsize=1024)
def published_face(name: str, code: str) -> np.ndarray:
    """One face of a published deck: BGRA, ``FACE_WIDTH`` wide, transparent outside the card."""
    folder = render_deck(name)
    face = cv2.imread(str(folder / f"{code}.png"), cv2.IMREAD_UNCHANGED)
    if face is None:
        raise DeckUnavailable(f"{name}: rendered face {code} unreadable")
    if face.ndim == 2:
        face = cv2.cvtColor(face, cv2.COLOR_GRAY2BGRA)
    elif face.shape[2] == 3:
        face = cv2.cvtColor(face, cv2.COLOR_BGR2BGRA)
    face.flags.writeable = False
    return face
