"""The dealer's and supervisor's procedure at a table: betting, the shoe, a card keyed in,
a round voided. Each is a table command (:mod:`table_service.routes.commands`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter

from table_service.consoles.approvals import check_void_approval
from table_service.errors import InvalidRequest
from table_service.routes.commands import CommandRoute, add_commands
from table_service.routes.models import CardIn, ReasonIn, VoidIn
from table_service.table import commands as c


def _card(body: CardIn, _: Mapping[str, Any]) -> c.Command:
    if body.cut_card:
        return c.CutCard()
    if body.card is None:
        raise InvalidRequest("give a card or cut_card=true")
    return c.CardScanned(body.card)


BETTING = (
    CommandRoute("/betting/open", "open_betting", c.OpenBetting, lambda _, __: c.OpenBetting()),
    CommandRoute(
        "/betting/close", "close_betting", c.CloseBetting, lambda _, __: c.CloseBetting("dealer")
    ),
)
ROUND_AND_SHOE = (
    CommandRoute(
        "/round/void",
        "void_round",
        c.VoidRound,
        lambda body, _: c.VoidRound(body.reason, body.change_shoe),
        VoidIn,
        check=check_void_approval,
    ),
    CommandRoute("/shoe", "insert_shoe", c.InsertShoe, lambda _, __: c.InsertShoe()),
    CommandRoute(
        "/shoe/change",
        "change_shoe",
        c.ChangeShoe,
        lambda body, _: c.ChangeShoe(body.reason),
        ReasonIn,
    ),
    CommandRoute(
        "/cards",
        "manual_card",
        c.CardScanned,
        _card,
        CardIn,
        doc="Keyboard entry of a card as if scanned (a table whose reader is down).",
    ),
)


def add_betting(router: APIRouter) -> None:
    add_commands(router, BETTING)


def add_round_and_shoe(router: APIRouter) -> None:
    add_commands(router, ROUND_AND_SHOE)
