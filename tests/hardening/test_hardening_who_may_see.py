"""Who may see (issue 30, hole 2): no read path shows a face-down card or another operator's
money before it may.

On the code before the one projection (:func:`table_service.table.view.view`), an operator's
``GET /tables/{t}``, ``GET /tables``, ``GET /tables/{t}/rounds`` and ``GET /rounds/{id}``
returned the Xì Dách house banker's face-down card while the punters were deciding, and
``GET /rounds/{id}`` returned ``settle_input.seats`` with the other operator's stake and
bet id (its ``bets`` list was filtered, the settle input was not). Runs on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import json
from typing import Any

from tests.hardening import test_hardening_who_may_act as acting
from tests.hardening.test_hardening_who_may_act import CARDS, Api, T, _dealt_round

api = acting.api  # the same fixture: operators A and B, a dealer, a supervisor

HOLE = CARDS[2]  # the house banker's first card: dealt face down


def _read(api: Api, path: str, who: str) -> Any:
    response = api.client.get(
        f"/api/v1{path}", headers={"Authorization": f"Bearer {api.tokens[who]}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def _bets(api: Api) -> dict[str, str]:
    """Account → bet id of the round's bets (from the log, as the staff see it)."""
    from audit.store import EventStore

    with api.runtime.reads() as session:
        return {
            b["account"]: b["bet_id"]
            for e in EventStore.read(session, table_id=T)
            if e.type == "bets_placed"
            for b in e.payload["bets"]
        }


def test_an_operator_reads_no_face_down_card_while_the_punters_decide(api: Api) -> None:
    _dealt_round(api)  # the punters are deciding; the house's hole card is face down
    round_id = _read(api, f"/tables/{T}", "supervisor")["round"]["round_id"]
    reads = (f"/tables/{T}", "/tables", f"/tables/{T}/rounds", f"/rounds/{round_id}")
    for who in ("opA", "opB"):
        for path in reads:
            text = json.dumps(_read(api, path, who))
            assert f'"{HOLE}"' not in text, (who, path, text)
        assert _read(api, f"/tables/{T}", who)["round"]["cards"][2] is None  # a card; not which
        assert _read(api, f"/rounds/{round_id}", who)["settle_input"]["cards"][2] is None
    for who in ("supervisor", "dealer"):  # the staff see the table as it is
        assert _read(api, f"/tables/{T}", who)["round"]["cards"] == list(CARDS)
    # once the house plays, the card is turned for everyone
    api.ok(*api.act("opB", "seat:2", "stand", "bob"))
    api.ok(*api.act("opA", "seat:1", "stand", "alice"))
    api.ok(*api.act("dealer", "banker", "check", None, target="all"))
    for path in (f"/rounds/{round_id}", f"/tables/{T}/rounds"):
        assert f'"{HOLE}"' in json.dumps(_read(api, path, "opA")), path


def test_an_operator_reads_no_other_operators_account_stake_or_bet_id(api: Api) -> None:
    _dealt_round(api)
    bets = _bets(api)
    round_id = _read(api, f"/tables/{T}", "supervisor")["round"]["round_id"]
    reads = (f"/tables/{T}", "/tables", f"/tables/{T}/rounds", f"/rounds/{round_id}")
    for who, mine, theirs in (("opA", "alice", "bob"), ("opB", "bob", "alice")):
        detail = _read(api, f"/rounds/{round_id}", who)
        settle = detail["settle_input"]
        assert [s["id"] for s in settle["seats"]] == [bets[mine]]  # its own stake only
        assert [s["stake"] for s in settle["seats"]] == [1000]
        assert [b["account"] for b in detail["bets"]] == [mine]
        for path in reads:
            text = json.dumps(_read(api, path, who))
            assert bets[theirs] not in text, (who, path)  # the other operator's bet id
            assert f'"{theirs}"' not in text, (who, path)  # and its account
        seats = {s["seat"]: s["account"] for s in _read(api, f"/tables/{T}", who)["seats"]}
        assert sorted(seats.values(), key=str) == [None, mine]  # a seat taken; by whom, not
    detail = _read(api, f"/rounds/{round_id}", "supervisor")
    assert {s["id"] for s in detail["settle_input"]["seats"]} == set(bets.values())
