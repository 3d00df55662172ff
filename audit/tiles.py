"""Tile paths of c2sp.org/tlog-tiles: ``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>...``.

``<N>`` is written in 3-digit groups, all but the last prefixed with ``x``
(1234067 → ``x001/x234/067``). Parsing accepts only the canonical spelling, so one tile
has exactly one URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT

_GROUP = re.compile(r"x\d{3}")
_LAST = re.compile(r"\d{3}")


class TilePathError(ValueError):
    pass


@dataclass(frozen=True)
class TileRef:
    level: int | None  # None for an entry bundle
    index: int
    width: int  # 1..256; 256 is a full tile

    @property
    def path(self) -> str:
        level = "entries" if self.level is None else str(self.level)
        suffix = "" if self.width == TILE_WIDTH else f".p/{self.width}"
        return f"tile/{level}/{encode_index(self.index)}{suffix}"


def encode_index(index: int) -> str:
    if index < 0:
        raise TilePathError("tile index must be non-negative")
    groups = []
    while True:
        groups.append(f"{index % 1000:03d}")
        index //= 1000
        if index == 0:
            break
    groups.reverse()
    return "/".join([*("x" + g for g in groups[:-1]), groups[-1]])


def parse_tile_path(path: str) -> TileRef:
    """``<L>/<N>[.p/<W>]`` or ``entries/<N>[.p/<W>]`` (the part after ``tile/``)."""
    parts = path.split("/")
    if len(parts) < 2:
        raise TilePathError("want <L>/<N>[.p/<W>]")
    head, rest = parts[0], parts[1:]
    width = TILE_WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        w = rest[-1]
        if not w.isdigit() or w != str(int(w)) or not 1 <= int(w) < TILE_WIDTH:
            raise TilePathError("partial width must be 1..255 without leading zeros")
        width = int(w)
        rest = [*rest[:-2], rest[-2][:-2]]
    if head == "entries":
        level: int | None = None
    elif head.isdigit() and head == str(int(head)) and int(head) <= 63:
        level = int(head)
    else:
        raise TilePathError("level must be 0..63 or 'entries'")
    if not rest or not _LAST.fullmatch(rest[-1]) or not all(_GROUP.fullmatch(g) for g in rest[:-1]):
        raise TilePathError("tile index must be 3-digit groups, all but the last with 'x'")
    digits = "".join(g.lstrip("x") for g in rest)
    index = int(digits)
    if encode_index(index) != "/".join(rest):
        raise TilePathError("non-canonical tile index")
    return TileRef(level, index, width)


def available(ref: TileRef, tree_size: int) -> bool:
    """Whether the tile exists in a tree of ``tree_size`` leaves (empty tiles never do)."""
    level = 0 if ref.level is None else ref.level
    hashes_at_level: int = tree_size // (TILE_WIDTH**level)  # int ** int is typed Any
    return ref.index * TILE_WIDTH + ref.width <= hashes_at_level
