"""One refusal family (issue 30): every error the rules core raises is a RulesRefusal,
the table's Refused and it share one root, and nothing turns a bare ValueError (a
defect) into a refusal."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime
from typing import Any

import pytest

import table_service.rules as rules_package
from table_service import errors
from table_service.rules.game import RulesRefusal
from table_service.rules.refusal import Refusal
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.decide import decide
from table_service.table.state import TableState


def _exception_classes(package: Any) -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found.append(value)
    return found


def test_every_rules_error_is_a_rules_refusal_and_shares_the_tables_root() -> None:
    classes = _exception_classes(rules_package)
    assert len(classes) >= 40  # the per-game families, cards, paytables, settle input
    outside = [cls.__qualname__ for cls in classes if not issubclass(cls, RulesRefusal)]
    outside = [name for name in outside if name not in ("Refusal",)]  # the root itself
    assert outside == []
    assert issubclass(RulesRefusal, Refusal) and issubclass(errors.Refused, Refusal)
    for cls in (errors.NotFound, errors.InvalidRequest, errors.Conflict, errors.Forbidden):
        assert issubclass(cls, errors.Refused)


def test_every_refusal_has_a_stable_code_and_a_reason() -> None:
    for cls in _exception_classes(rules_package):
        if not issubclass(cls, Refusal) or inspect.signature(cls).parameters.keys() - {
            "reason",
            "code",
            "details",
        }:
            continue
        exc = cls("why")
        assert exc.reason == "why" and exc.code and isinstance(exc.code, str)


def test_a_defect_in_a_game_is_not_turned_into_a_refused_bet(monkeypatch: Any) -> None:
    """A plain ValueError from the game (a bug, not a refusal) propagates: it is never
    answered as a refused bet, which would hide it behind a 200."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    config = TableConfig(table_id="t")
    state = decide(TableState("t"), c.OpenTable(config), now=now, actor="t").state
    for command in (c.InsertShoe(), c.CardScanned("2S"), c.CardScanned("3H"), c.CardScanned("4H")):
        state = decide(state, command, now=now, actor="t").state
    state = decide(state, c.OpenBetting(), now=now, actor="t").state
    bet = c.BetRequest("b1", "k", "alice", "player", 100)
    placed = decide(state, c.PlaceBets((bet,), {"alice": 1000}), now=now, actor="t")
    assert placed.answer["results"][0]["status"] == "placed"

    game = type(config.game_impl)

    def broken(*_: Any) -> None:
        raise ValueError("a defect")

    monkeypatch.setattr(game, "check_bet", broken)
    with pytest.raises(ValueError, match="a defect") as raised:
        decide(state, c.PlaceBets((bet,), {"alice": 1000}), now=now, actor="t")
    assert not isinstance(raised.value, Refusal)
