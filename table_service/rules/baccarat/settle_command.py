"""One line of ``livetable settle baccarat``: a round's cards and bets in, results out.

Pure: the JSON-lines loop (``settle_io.run_jsonl``) does the I/O, this module only maps a
request object to a response object (shared/specs/settle-jsonl.md), through the same
``split_round`` / ``outcome`` / ``validate_bet`` / ``settle_bet`` as the live table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from table_service.rules.baccarat.dealing import split_round
from table_service.rules.baccarat.errors import BetRefused
from table_service.rules.baccarat.outcome import Outcome, outcome
from table_service.rules.baccarat.paytable import Paytable
from table_service.rules.baccarat.settlement import settle_bet, validate_bet
from table_service.rules.cards import parse_cards
from table_service.rules.refusal import RulesRefusal


class MalformedRequest(RulesRefusal):
    """A settle line whose shape does not follow the spec."""

    code = "malformed_request"


def _game_number(request: Mapping[str, Any]) -> int | None:
    game_number = request.get("game_number")
    if game_number is None:
        return None
    if isinstance(game_number, bool) or not isinstance(game_number, int) or game_number < 1:
        raise MalformedRequest(f"game_number must be a positive integer, got {game_number!r}")
    return game_number


def _settle_one(
    bet: Any, game_number: int | None, result: Outcome, paytable: Paytable
) -> dict[str, Any]:
    if not isinstance(bet, dict):
        raise MalformedRequest(f"each bet must be an object, got {bet!r}")
    bet_type = bet.get("type")
    stake: Any = bet.get("stake")  # validate_bet refuses a stake that is no integer
    if not isinstance(bet_type, str):
        raise MalformedRequest(f"bet {bet.get('id')!r}: 'type' must be a string")
    if "stake" not in bet:
        raise MalformedRequest(f"bet {bet.get('id')!r}: 'stake' is missing")
    line: dict[str, Any] = {"id": bet.get("id"), "type": bet_type, "stake": stake}
    try:
        validate_bet(bet_type, stake, game_number, paytable)
    except BetRefused as refused:
        line.update(result="refused", code=refused.code, reason=refused.reason, returned=0)
        return line
    settled = settle_bet(bet_type, stake, result, paytable)
    line.update(result=settled.result, returned=settled.returned)
    return line


def settle_request(request: Mapping[str, Any], paytable: Paytable) -> dict[str, Any]:
    """The response line for one request line. Raises on a line that cannot be processed
    (bad cards, too few cards, malformed bets); refused bets are answered in place."""
    cards_raw = request.get("cards")
    if not isinstance(cards_raw, list):
        raise MalformedRequest("'cards' must be a list of card codes")
    bets_raw = request.get("bets", [])
    if not isinstance(bets_raw, list):
        raise MalformedRequest("'bets' must be a list")
    game_number = _game_number(request)
    used, unused = split_round(parse_cards(cards_raw))
    result = outcome(used)
    response: dict[str, Any] = {}
    if "round" in request:
        response["round"] = request["round"]
    if game_number is not None:
        response["game_number"] = game_number
    response.update(result.to_json())
    response["unused_cards"] = [card.code for card in unused]
    response["bets"] = [_settle_one(bet, game_number, result, paytable) for bet in bets_raw]
    return response
