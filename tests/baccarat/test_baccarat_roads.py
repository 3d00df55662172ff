"""The five baccarat roads against worked examples (computed by hand from the studios'
conventions written in the module docstring) and properties over random shoes."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_service.rules.baccarat import roads as roads_module
from table_service.rules.baccarat.roads import (
    BigRoadCell,
    DerivedCell,
    RoadError,
    RoadResult,
    big_road,
    parse_results,
    place,
    predict,
    roads,
)

R, B = "red", "blue"

# Worked example 1: B B | P P P | B | P | B B B B | P P  (column lengths 2 3 1 1 4 2).
EXAMPLE_1 = "B B P P P B P B B B B P P"
# Big Eye Boy (offset 1), entry by entry from its start at column 2 row 2:
#  col2 row2: col1 has a row 2            -> red
#  col2 row3: col1 has no row 3, has row 2 -> blue
#  col3 row1: cols 2 and 1 lengths 3 vs 2  -> blue
#  col4 row1: cols 3 and 2 lengths 1 vs 3  -> blue
#  col5 row1: cols 4 and 3 lengths 1 vs 1  -> red
#  col5 row2: col4 has no row 2, has row 1 -> blue
#  col5 row3: col4 has neither row 3 nor 2 -> red
#  col5 row4: likewise                      -> red
#  col6 row1: cols 5 and 4 lengths 4 vs 1  -> blue
#  col6 row2: col5 has a row 2             -> red
BIG_EYE_BOY_1 = [R, B, B, B, R, B, R, R, B, R]
# Small Road (offset 2) starts at column 3 row 2, else column 4 row 1 (here: col 4 row 1).
SMALL_ROAD_1 = [B, B, B, R, R, B, B]
# Cockroach Pig (offset 3) starts at column 4 row 2, else column 5 row 1.
COCKROACH_PIG_1 = [B, R, R, B, B, B]


def side(cell: BigRoadCell) -> str:
    """A big road cell's winner as one letter (B or P); a test reading it expects one."""
    assert cell.winner is not None, "a cell of ties only"
    return cell.winner[0].upper()


def colours(cells: tuple[DerivedCell, ...]) -> list[str]:
    return [c.colour for c in cells]


def test_worked_example_derived_roads() -> None:
    result = roads(parse_results(EXAMPLE_1))
    assert colours(result.big_eye_boy) == BIG_EYE_BOY_1
    assert colours(result.small_road) == SMALL_ROAD_1
    assert colours(result.cockroach_pig) == COCKROACH_PIG_1


def test_worked_example_derived_road_grid() -> None:
    # Big Eye Boy R | B B B | R | B | R R | B | R drawn as streaks down, new column on change.
    cells = roads(parse_results(EXAMPLE_1)).big_eye_boy
    assert [(c.col, c.row) for c in cells] == [
        (0, 0),
        (1, 0),
        (1, 1),
        (1, 2),
        (2, 0),
        (3, 0),
        (4, 0),
        (4, 1),
        (5, 0),
        (6, 0),
    ]


def test_worked_example_big_road_grid() -> None:
    cells = roads(parse_results(EXAMPLE_1)).big_road
    assert [(c.col, c.row, side(c)) for c in cells] == [
        (0, 0, "B"),
        (0, 1, "B"),
        (1, 0, "P"),
        (1, 1, "P"),
        (1, 2, "P"),
        (2, 0, "B"),
        (3, 0, "P"),
        (4, 0, "B"),
        (4, 1, "B"),
        (4, 2, "B"),
        (4, 3, "B"),
        (5, 0, "P"),
        (5, 1, "P"),
    ]


def test_worked_example_predictions() -> None:
    # Next Player: column 6 row 3 against col 5 (length 4), col 4 (1), col 3 (1): all red.
    # Next Banker: a new column 7: cols 6 vs 5 (2 vs 4), 6 vs 4 (2 vs 1), 6 vs 3: all blue.
    result = roads(parse_results(EXAMPLE_1))
    assert result.predictions["player"] == {
        "big_eye_boy": R,
        "small_road": R,
        "cockroach_pig": R,
    }
    assert result.predictions["banker"] == {
        "big_eye_boy": B,
        "small_road": B,
        "cockroach_pig": B,
    }


def test_ties_are_counted_on_the_last_win_and_leading_ties_on_the_first() -> None:
    # T | B x7 (dragon tail) | P T T P | B
    results = parse_results("T B B B B B B B P T T P B")
    cells = big_road(results)
    assert [(c.col, c.row) for c in cells] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (0, 5),
        (1, 5),  # the seventh Banker turns right along the bottom row
        (1, 0),
        (1, 1),
        (2, 0),
    ]
    assert [c.ties for c in cells] == [1, 0, 0, 0, 0, 0, 0, 2, 0, 0]
    assert [c.round for c in cells] == [2, 3, 4, 5, 6, 7, 8, 9, 12, 13]
    assert [c.logical_col for c in cells] == [0, 0, 0, 0, 0, 0, 0, 1, 1, 2]
    assert cells[6].logical_row == 6


def test_a_streak_that_meets_a_dragon_tail_turns_above_it() -> None:
    # B x7 leaves a tail at (1,5); the next P x6 goes down column 1 to row 4, then right.
    cells = big_road(parse_results("B B B B B B B P P P P P P B"))
    player = [(c.col, c.row) for c in cells if c.winner == "player"]
    assert player == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]
    assert (cells[-1].col, cells[-1].row) == (2, 0)


def test_a_dragon_tail_keeps_going_right_on_its_row() -> None:
    assert place([9])[5:] == [(0, 5), (1, 5), (2, 5), (3, 5)]
    assert place([1, 1, 2]) == [(0, 0), (1, 0), (2, 0), (2, 1)]


def test_only_ties_so_far_show_one_placeholder_cell() -> None:
    cells = big_road(parse_results("T T"))
    assert len(cells) == 1
    assert cells[0].winner is None and cells[0].ties == 2
    first = big_road(parse_results("T T P"))
    assert [(c.winner, c.ties, c.round) for c in first] == [("player", 2, 3)]
    assert big_road(()) == ()


def test_bead_plate_marks_every_round_with_its_pairs() -> None:
    beads = roads(parse_results("Bb P T Ppb Bn T Pp")).bead_plate
    assert [(b.col, b.row) for b in beads] == [(0, i) for i in range(6)] + [(1, 0)]
    assert [b.winner for b in beads] == [
        "banker",
        "player",
        "tie",
        "player",
        "banker",
        "tie",
        "player",
    ]
    assert [(b.banker_pair, b.player_pair) for b in beads] == [
        (True, False),
        (False, False),
        (False, False),
        (True, True),
        (False, False),
        (False, False),
        (False, True),
    ]
    assert beads[4].natural


def test_pairs_on_the_big_road_are_the_cell_rounds_own() -> None:
    cells = big_road(parse_results("Bb Tp Pp"))
    assert [(c.winner, c.banker_pair, c.player_pair, c.ties) for c in cells] == [
        ("banker", True, False, 1),
        ("player", False, True, 0),
    ]


def test_counts() -> None:
    counts = roads(parse_results("Bb P T Ppb Bn T Pp")).counts
    assert counts == {
        "rounds": 7,
        "banker": 2,
        "player": 3,
        "tie": 2,
        "banker_pair": 2,
        "player_pair": 2,
        "natural": 1,
    }


def test_ties_change_no_derived_road() -> None:
    plain = roads(parse_results(EXAMPLE_1))
    tied = roads(parse_results("T B T B P T P P B P B B T B B P P T"))
    assert tied.big_eye_boy == plain.big_eye_boy
    assert tied.small_road == plain.small_road
    assert tied.cockroach_pig == plain.cockroach_pig


def test_from_outcome_reads_the_table_round_result() -> None:
    outcome = {
        "winner": "banker",
        "player_total": 3,
        "banker_total": 9,
        "natural": True,
        "player_pair": False,
        "banker_pair": True,
    }
    assert RoadResult.from_outcome(outcome) == RoadResult("banker", False, True, True)
    with pytest.raises(RoadError):
        RoadResult.from_outcome({"winner": "dragon"})
    with pytest.raises(RoadError):
        parse_results("B X")


def test_to_json_shape() -> None:
    data = roads(parse_results("B P")).to_json()
    assert data["rows"] == 6
    assert data["big_road"][1] == {
        "col": 1,
        "row": 0,
        "logical_col": 1,
        "logical_row": 0,
        "winner": "player",
        "ties": 0,
        "player_pair": False,
        "banker_pair": False,
        "round": 2,
    }
    assert data["big_eye_boy"] == []


def test_doctests() -> None:
    assert doctest.testmod(roads_module).failed == 0


shoes = st.lists(
    st.builds(
        RoadResult,
        st.sampled_from(["banker", "player", "tie"]),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
    max_size=90,
)


@given(shoes)
def test_every_road_is_a_grid_with_one_mark_per_cell(results: list[RoadResult]) -> None:
    result = roads(results)
    for road in (
        result.bead_plate,
        result.big_road,
        result.big_eye_boy,
        result.small_road,
        result.cockroach_pig,
    ):
        spots = [(c.col, c.row) for c in road]
        assert len(spots) == len(set(spots))
        assert all(0 <= row < 6 and col >= 0 for col, row in spots)
    wins = [r for r in results if r.winner != "tie"]
    ties = len(results) - len(wins)
    assert len(result.bead_plate) == len(results)
    assert len(result.big_road) == (len(wins) or (1 if ties else 0))
    assert sum(c.ties for c in result.big_road) == ties


@given(shoes, st.integers(0, 90))
def test_roads_only_grow_as_the_shoe_goes_on(results: list[RoadResult], cut: int) -> None:
    before, after = roads(results[:cut]), roads(results)
    for name in ("bead_plate", "big_eye_boy", "small_road", "cockroach_pig"):
        old, new = getattr(before, name), getattr(after, name)
        assert new[: len(old)] == old
    old_spots = [(c.col, c.row, c.winner) for c in before.big_road if c.winner]
    new_spots = [(c.col, c.row, c.winner) for c in after.big_road]
    assert new_spots[: len(old_spots)] == old_spots


@given(shoes)
def test_predictions_are_what_the_next_win_adds(results: list[RoadResult]) -> None:
    now = roads(results)
    for side in ("banker", "player"):
        nxt = roads([*results, RoadResult(side)])
        for name in ("big_eye_boy", "small_road", "cockroach_pig"):
            added = getattr(nxt, name)[len(getattr(now, name)) :]
            expected = predict(results, side)[name]
            assert [c.colour for c in added] == ([expected] if expected else [])
    # Banker and Player always ask for opposite colours where a road adds a mark.
    for name in ("big_eye_boy", "small_road", "cockroach_pig"):
        b, p = now.predictions["banker"][name], now.predictions["player"][name]
        assert (b is None) == (p is None)
        if b is not None:
            assert b != p


@given(shoes)
def test_derived_roads_start_where_their_reference_cell_exists(
    results: list[RoadResult],
) -> None:
    lengths = [0]
    last = None
    for r in results:
        if r.winner == "tie":
            continue
        if r.winner == last:
            lengths[-1] += 1
        else:
            if last is not None:
                lengths.append(0)
            lengths[-1] += 1
            last = r.winner
    result = roads(results)
    wins = sum(lengths)
    for name, offset in (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3)):
        # every win after the first `offset` columns, and after the first cell of
        # column `offset`, adds one mark
        before = sum(lengths[:offset]) + (1 if len(lengths) > offset else 0)
        assert len(getattr(result, name)) == max(0, wins - before)
