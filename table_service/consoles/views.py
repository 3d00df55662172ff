"""What the consoles show, built from the table's summary and its log.

The pages render these shapes and compute nothing of the game themselves: where each card
sits and the hands' totals come from the rules code, so a console can never disagree with
the settlement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from table_service.rules.games import DEFAULT_GAME
from table_service.table.incidents import dealer_may_report, game_named, incident_kind


def procedure_of(
    game: str | None, kind: str | None, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The procedure the catalogue prescribes for ``kind`` at a table running ``game``,
    with the key the pages translate it by (``<game>.<kind>`` or ``table.<kind>``).

    A kind no catalogue knows keeps the text recorded with it, if any.
    """
    entry = incident_kind(game, kind)
    if entry is None:
        text = (details or {}).get("procedure")
        return {"procedure": str(text) if text else None, "procedure_key": None}
    found = game_named(game)
    own = found is not None and entry.kind in found.incidents
    return {
        "procedure": entry.procedure,
        "procedure_key": f"{found.name if own and found else 'table'}.{entry.kind}",
    }


def game_of(summary: Mapping[str, Any], config: Mapping[str, Any] | None) -> str:
    game = summary.get("game") or (config or {}).get("game") or DEFAULT_GAME
    return str(game)


def console_view(
    summary: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    *,
    audience: str,
    game_view: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary with the round laid out for ``audience`` (``public`` or ``dealer``).

    Baccarat is laid out here by position with each hand's total, from the rules; any
    other game's own view for that audience (``game_view``, from the game's ``view``) is
    passed through as the layout.
    """
    game = game_of(summary, config)
    rnd = summary.get("round") or None
    view: dict[str, Any] = {
        "table_id": summary.get("table_id"),
        "game": game,
        "opened": summary.get("opened"),
        "paused": bool(summary.get("paused")),
        "reader_online": bool(summary.get("reader_online")),
        "last_seq": summary.get("last_seq", 0),
        "shoe": _public_shoe(summary.get("shoe")),
        "round": None,
    }
    if rnd is not None:
        round_view: dict[str, Any] = {
            "round_id": rnd.get("round_id"),
            "game_number": rnd.get("game_number"),
            "phase": rnd.get("phase"),
            "deadline": rnd.get("deadline") or rnd.get("closes_at"),
            "closes_at": rnd.get("closes_at"),
            "next": _next_target(rnd),
            "turn": _turn(rnd),
            "outcome": rnd.get("outcome"),
        }
        impl = game_named(game)
        layout = impl.layout(rnd.get("cards") or []) if impl is not None else None
        if layout is not None:  # a layout from the cards alone (baccarat's positions)
            round_view["layout"] = layout
        else:
            chosen = game_view if game_view is not None else rnd.get("view")
            round_view["layout"] = dict(chosen) if isinstance(chosen, Mapping) else {}
        if audience == "dealer":
            round_view["cards"] = list(rnd.get("cards") or [])
            round_view["legal_actions"] = rnd.get("legal_actions")
            round_view["show_again"] = rnd.get("show_again")
        view["round"] = round_view
    if audience == "dealer":
        view["incidents"] = [
            {
                "incident_id": i.get("incident_id"),
                "kind": i.get("kind"),
                "blocking": i.get("blocking"),
                **procedure_of(game, i.get("kind"), i.get("details")),
                "round_id": i.get("round_id"),
                "details": {k: v for k, v in (i.get("details") or {}).items() if k != "procedure"},
            }
            for i in summary.get("incidents") or []
        ]
        view["dealer_incidents"] = [
            {
                "kind": k.kind,
                "blocking": k.blocking,
                "count": "void_on_count" in k.effects,
                "procedure": k.procedure,
                "procedure_key": f"{game}.{k.kind}",
            }
            for k in dealer_may_report(game)
        ]
    else:
        view["incidents"] = [
            {"kind": i.get("kind"), "blocking": i.get("blocking")}
            for i in summary.get("incidents") or []
            if i.get("blocking")
        ]
    return view


def _public_shoe(shoe: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if shoe is None:
        return None
    keys = ("shoe_no", "ready", "cut_card_drawn", "games", "cards_seen", "burn_remaining")
    return {k: shoe.get(k) for k in keys}


def _next_target(rnd: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where the next card goes (``code``, ``seat``, ``hand``, ``face_up``), or None when
    no card is owed (a decision is awaited, the round is complete)."""
    target = rnd.get("next")
    if isinstance(target, Mapping):
        if target.get("kind", "card") == "card" and target.get("code"):
            return dict(target)
        return None
    position = rnd.get("next_position")
    if isinstance(position, str) and position:
        return {"kind": "card", "code": position}
    return None


def _turn(rnd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The decision awaited: who, the legal actions, and the recorded deadline."""
    turn = rnd.get("turn")
    if isinstance(turn, Mapping):
        return dict(turn)
    target = rnd.get("next")
    if isinstance(target, Mapping) and target.get("kind") == "decision":
        return {k: v for k, v in target.items() if k != "kind"}
    if isinstance(target, Mapping) and target.get("kind") == "supervisor":
        return {"actors": ["supervisor"], "cards_not_taken": target.get("cards_not_taken")}
    return None
