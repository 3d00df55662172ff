"""The baccarat roads a live studio shows: Bead Plate, Big Road, Big Eye Boy, Small Road
and Cockroach Pig, computed from one shoe's results in order.

Pure: a tuple of :class:`RoadResult` in, frozen grids out. The overlay, the roads API and
the tests read the same function, so a road is drawn one way everywhere.

Conventions (those of the scoreboards at Macau and online live-baccarat studios):

- Grids are six rows deep. Columns grow to the right without limit; a display shows the
  rightmost columns that fit.
- **Bead Plate**: every round in order, ties included, filled top to bottom, then the
  next column to the right.
- **Big Road**: Banker and Player wins only. Same winner as the last: one row down; the
  other winner: top of a new column. A streak that reaches the sixth row, or would step
  onto a cell already taken, turns right along its row (the "dragon tail") and keeps going
  right. A tie is not a cell: it is counted on the cell of the last Banker or Player win
  (the green slash, with the number of ties); ties before the shoe's first Banker or
  Player win are counted on that first cell (until it exists, a placeholder cell with no
  winner carries them). Pairs are marked on the cell of their own round (a tie round's
  pairs show on the Bead Plate only).
- **Derived roads** (Big Eye Boy, Small Road, Cockroach Pig: offsets 1, 2 and 3) read the
  Big Road's logical columns (each streak, however it is drawn). For each Banker or
  Player win at column ``c`` and row ``r`` (0-based), from the first one whose reference
  cell exists — (offset, 1), else (offset + 1, 0):

  * ``r == 0`` (a new column): red if columns ``c-1`` and ``c-1-offset`` have the same
    length, else blue;
  * ``r >= 1``: with ``n`` the length of column ``c-offset``: blue if ``n == r`` (the
    cell beside is empty but the one above it is not), else red.

  Red marks a shoe that repeats its pattern, blue one that breaks it. The entries are
  drawn like the Big Road (same colour down, a change of colour to a new column, dragon
  tails).
- **Prediction** (the "ask Banker / ask Player" marks): the colour each derived road
  would add if the next round were a Banker or a Player win.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from table_service.rules.baccarat.outcome import BANKER, PLAYER, TIE, Winner
from table_service.rules.refusal import RulesRefusal

ROWS = 6
Colour = Literal["red", "blue"]
Side = Literal["banker", "player"]
_SIDES: tuple[Side, ...] = ("banker", "player")
DERIVED: dict[str, int] = {"big_eye_boy": 1, "small_road": 2, "cockroach_pig": 3}


class RoadError(RulesRefusal):
    """A result the roads cannot record (an unknown winner)."""

    code = "bad_road_result"


@dataclass(frozen=True, slots=True)
class RoadResult:
    """One settled round as the roads read it."""

    winner: Winner
    player_pair: bool = False
    banker_pair: bool = False
    natural: bool = False

    def __post_init__(self) -> None:
        _winner(self.winner)

    @classmethod
    def from_outcome(cls, outcome: Mapping[str, Any]) -> RoadResult:
        """From a ``round_result`` event's outcome (as the table records it)."""
        natural = outcome.get("natural")
        if natural is None:
            natural = bool(outcome.get("player_natural") or outcome.get("banker_natural"))
        return cls(
            winner=_winner(outcome.get("winner")),
            player_pair=bool(outcome.get("player_pair")),
            banker_pair=bool(outcome.get("banker_pair")),
            natural=bool(natural),
        )


_WINNERS: Mapping[object, Winner] = {BANKER: BANKER, PLAYER: PLAYER, TIE: TIE}
_SIDE_WON: Mapping[Winner, Side] = {BANKER: "banker", PLAYER: "player"}  # who won, not a tie


def _winner(value: object) -> Winner:
    """A winner the roads record, or :class:`RoadError` (a result read from a log may
    carry anything)."""
    winner = _WINNERS.get(value)
    if winner is None:
        raise RoadError(f"unknown winner {value!r}")
    return winner


@dataclass(frozen=True, slots=True)
class Bead:
    col: int
    row: int
    round: int  # 1-based round number in the shoe
    winner: Winner
    player_pair: bool
    banker_pair: bool
    natural: bool


@dataclass(frozen=True, slots=True)
class BigRoadCell:
    col: int  # where it is drawn
    row: int
    logical_col: int  # the streak it belongs to
    logical_row: int
    winner: Side | None  # None: only ties so far in this shoe
    ties: int
    player_pair: bool
    banker_pair: bool
    round: int  # 1-based round number of the win (0 for the tie-only placeholder)


@dataclass(frozen=True, slots=True)
class DerivedCell:
    col: int
    row: int
    colour: Colour


@dataclass(frozen=True, slots=True)
class Roads:
    bead_plate: tuple[Bead, ...]
    big_road: tuple[BigRoadCell, ...]
    big_eye_boy: tuple[DerivedCell, ...]
    small_road: tuple[DerivedCell, ...]
    cockroach_pig: tuple[DerivedCell, ...]
    counts: Mapping[str, int]
    predictions: Mapping[str, Mapping[str, Colour | None]]

    def to_json(self) -> dict[str, Any]:
        def cells(items: Iterable[Any]) -> list[dict[str, Any]]:
            return [{k: getattr(item, k) for k in item.__slots__} for item in items]

        return {
            "rows": ROWS,
            "bead_plate": cells(self.bead_plate),
            "big_road": cells(self.big_road),
            "big_eye_boy": cells(self.big_eye_boy),
            "small_road": cells(self.small_road),
            "cockroach_pig": cells(self.cockroach_pig),
            "counts": dict(self.counts),
            "predictions": {k: dict(v) for k, v in self.predictions.items()},
        }


def bead_plate(results: Sequence[RoadResult]) -> tuple[Bead, ...]:
    return tuple(
        Bead(i // ROWS, i % ROWS, i + 1, r.winner, r.player_pair, r.banker_pair, r.natural)
        for i, r in enumerate(results)
    )


def place(columns: Sequence[int]) -> list[tuple[int, int]]:
    """Grid positions for streaks of the given lengths, with dragon tails.

    Each streak starts at the top of the first free column right of where the previous
    streak started; it goes down until the sixth row or a taken cell, then right.

    >>> place([2, 1])
    [(0, 0), (0, 1), (1, 0)]
    >>> place([7])[-2:]
    [(0, 5), (1, 5)]
    """
    taken: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    start = -1
    for length in columns:
        col = start + 1
        while (col, 0) in taken:
            col += 1
        start = col
        row = 0
        turned = False
        for i in range(length):
            if i > 0:
                if not turned and row + 1 < ROWS and (col, row + 1) not in taken:
                    row += 1
                else:
                    turned = True
                    col += 1
                    while (col, row) in taken:
                        col += 1
            taken.add((col, row))
            out.append((col, row))
    return out


def _streaks(results: Sequence[RoadResult]) -> list[list[int]]:
    """Indexes of the Banker/Player wins, grouped into the Big Road's logical columns."""
    streaks: list[list[int]] = []
    last: Winner | None = None
    for i, r in enumerate(results):
        if r.winner == TIE:
            continue
        if r.winner == last:
            streaks[-1].append(i)
        else:
            streaks.append([i])
            last = r.winner
    return streaks


def big_road(results: Sequence[RoadResult]) -> tuple[BigRoadCell, ...]:
    streaks = _streaks(results)
    if not streaks:
        ties = len(results)
        if not ties:
            return ()
        return (BigRoadCell(0, 0, 0, 0, None, ties, False, False, 0),)
    wins = [i for streak in streaks for i in streak]
    ties_after = {i: 0 for i in wins}
    leading = 0
    last: int | None = None
    for i, r in enumerate(results):
        if r.winner != TIE:
            last = i
        elif last is None:
            leading += 1
        else:
            ties_after[last] += 1
    ties_after[wins[0]] += leading
    positions = place([len(s) for s in streaks])
    cells = []
    k = 0
    for logical_col, streak in enumerate(streaks):
        for logical_row, i in enumerate(streak):
            col, row = positions[k]
            k += 1
            r = results[i]
            cells.append(
                BigRoadCell(
                    col,
                    row,
                    logical_col,
                    logical_row,
                    _SIDE_WON[r.winner],  # never a tie: streaks hold the wins only
                    ties_after[i],
                    r.player_pair,
                    r.banker_pair,
                    i + 1,
                )
            )
    return tuple(cells)


def derived_colours(lengths: Sequence[int], offset: int) -> list[Colour]:
    """The colour sequence of a derived road from the Big Road's column lengths.

    >>> derived_colours([2, 2, 1], 1)  # B B | P P | B
    ['red', 'red']
    """
    colours: list[Colour] = []
    for c, length in enumerate(lengths):
        for r in range(length):
            colour = _colour(lengths, c, r, offset)
            if colour is not None:
                colours.append(colour)
    return colours


def _colour(lengths: Sequence[int], c: int, r: int, offset: int) -> Colour | None:
    if r == 0:
        if c < offset + 1:
            return None
        return "red" if lengths[c - 1] == lengths[c - 1 - offset] else "blue"
    if c < offset:
        return None
    return "blue" if lengths[c - offset] == r else "red"


def derived_road(lengths: Sequence[int], offset: int) -> tuple[DerivedCell, ...]:
    colours = derived_colours(lengths, offset)
    runs: list[int] = []
    for i, colour in enumerate(colours):
        if i and colour == colours[i - 1]:
            runs[-1] += 1
        else:
            runs.append(1)
    return tuple(
        DerivedCell(col, row, colour)
        for (col, row), colour in zip(place(runs), colours, strict=True)
    )


def _lengths(results: Sequence[RoadResult]) -> list[int]:
    return [len(s) for s in _streaks(results)]


def predict(results: Sequence[RoadResult], side: Side) -> dict[str, Colour | None]:
    """The colour each derived road would add if the next round were won by ``side``
    (None: that road would not yet add an entry)."""
    lengths = _lengths(results)
    wins = [r.winner for r in results if r.winner != TIE]
    if wins and wins[-1] == side:
        lengths[-1] += 1
    else:
        lengths.append(1)
    c, r = len(lengths) - 1, lengths[-1] - 1
    return {name: _colour(lengths, c, r, offset) for name, offset in DERIVED.items()}


def roads(results: Iterable[RoadResult]) -> Roads:
    """All five roads, the counts and the next-round predictions for one shoe."""
    items = tuple(results)
    lengths = _lengths(items)
    counts = {
        "rounds": len(items),
        "banker": sum(r.winner == BANKER for r in items),
        "player": sum(r.winner == PLAYER for r in items),
        "tie": sum(r.winner == TIE for r in items),
        "banker_pair": sum(r.banker_pair for r in items),
        "player_pair": sum(r.player_pair for r in items),
        "natural": sum(r.natural for r in items),
    }
    return Roads(
        bead_plate=bead_plate(items),
        big_road=big_road(items),
        big_eye_boy=derived_road(lengths, DERIVED["big_eye_boy"]),
        small_road=derived_road(lengths, DERIVED["small_road"]),
        cockroach_pig=derived_road(lengths, DERIVED["cockroach_pig"]),
        counts=counts,
        predictions={side: predict(items, side) for side in _SIDES},
    )


def parse_results(text: str) -> tuple[RoadResult, ...]:
    """Results from a compact string, for examples and tests: ``B``, ``P``, ``T``, each
    optionally followed by ``b`` (banker pair), ``p`` (player pair), ``n`` (natural).

    >>> [r.winner for r in parse_results("B Pp T")]
    ['banker', 'player', 'tie']
    """
    names: dict[str, Winner] = {"B": BANKER, "P": PLAYER, "T": TIE}
    out: list[RoadResult] = []
    for token in text.split():
        head, flags = token[0], token[1:]
        if head not in names or set(flags) - set("bpn"):
            raise RoadError(f"bad result token {token!r}")
        out.append(RoadResult(names[head], "p" in flags, "b" in flags, "n" in flags))
    return tuple(out)
