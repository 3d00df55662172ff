"""The consoles read each game's incident catalogue (what a dealer may report, the procedure
the supervisor follows), and the recall lists every bet of a round, page by page."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.principals import add_principal
from table_service.rules.games import GAMES, find_game
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from table_service.table.incidents import (
    SUPERVISOR_EFFECTS,
    TABLE_INCIDENTS,
    catalogue,
    dealer_may_report,
)

TABLES = [
    TableConfig(table_id="bac-1", betting_seconds=60),
    TableConfig(table_id="bj-1", game="blackjack", betting_seconds=60),
    TableConfig(table_id="xd-1", game="xidach", betting_seconds=60),
]


class Rig:
    def __init__(self, client: TestClient, tokens: dict[str, str]) -> None:
        self.client = client
        self.tokens = tokens

    def call(self, method: str, path: str, role: str, body: Any = None, status: int = 200) -> Any:
        response = self.client.request(
            method,
            f"/api/v1{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.tokens[role]}"},
        )
        assert response.status_code == status, response.text
        return response.json()


@pytest.fixture
def rig(make_runtime: Callable[..., Runtime]) -> Iterator[Rig]:
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for name, role in (
            ("supervisor", "supervisor"),
            ("regulator", "regulator"),
            ("operator", "operator"),
            ("dealer", "dealer"),
        ):
            tokens[name] = add_principal(session, runtime.store, name, role, actor="test")
    with TestClient(build_app(runtime, TABLES, with_readers=False)) as client:
        yield Rig(client, tokens)


def test_each_game_lists_what_a_dealer_may_report_from_its_own_catalogue(rig: Rig) -> None:
    for config in TABLES:
        game = find_game(config.game)
        view = rig.call("GET", f"/console/tables/{config.table_id}/view", "dealer")
        listed = view["dealer_incidents"]
        expected = [
            k
            for k in game.incidents.values()
            if not k.effects & SUPERVISOR_EFFECTS and k.kind not in TABLE_INCIDENTS
        ]
        assert [k["kind"] for k in listed] == [k.kind for k in expected]
        assert listed, config.game
        for item, kind in zip(listed, expected, strict=True):
            assert item["procedure"] == kind.procedure
            assert item["procedure_key"] == f"{config.game}.{kind.kind}"
            assert item["count"] == ("void_on_count" in kind.effects)
            assert item["blocking"] == kind.blocking
    # a kind that voids the round by itself is the supervisor's, never on the dealer's list
    assert "misdeal" in find_game("xidach").incidents
    assert "misdeal" not in [k.kind for k in dealer_may_report("xidach")]
    # blackjack's errors pause the table for the supervisor to confirm: the dealer reports
    # them; a card no position is owed is the table's to raise, not the dealer's
    blackjack = [k.kind for k in dealer_may_report("blackjack")]
    assert "misdeal" in blackjack and "card_not_owed" not in blackjack
    assert not {"missed_scan", "multi_pull"} & set(find_game("blackjack").incidents)
    assert [k.kind for k in dealer_may_report("baccarat")][:1] == ["shuffle_card_dropped"]
    assert dealer_may_report("no-such-game") == ()


def test_the_supervisor_reads_the_procedure_from_the_game_or_the_table_catalogue(
    rig: Rig,
) -> None:
    rig.call("POST", "/tables/bj-1/shoe", "supervisor")
    raised = rig.call("POST", "/tables/bj-1/incidents", "dealer", {"kind": "wrong_position"})
    assert raised["blocking"] is True
    [tile] = [
        t for t in rig.call("GET", "/console/overview", "supervisor") if t["table_id"] == "bj-1"
    ]
    [incident] = tile["incidents"]
    assert incident["procedure"] == find_game("blackjack").incidents["wrong_position"].procedure
    assert incident["procedure_key"] == "blackjack.wrong_position"
    # every kind a table can show has its procedure in one catalogue, per game
    for name in GAMES:
        kinds = catalogue(name)
        assert set(find_game(name).incidents) | set(TABLE_INCIDENTS) == set(kinds)
        assert all(k.procedure for k in kinds.values())


def _credit(rig: Rig, accounts: int) -> None:
    for i in range(accounts):
        rig.call(
            "POST", f"/accounts/a{i}/credit", "operator", {"amount": 10**7, "reference": f"c{i}"}
        )


def test_recall_pages_through_every_bet_of_a_round(rig: Rig) -> None:
    rig.call("POST", "/tables/bac-1/shoe", "supervisor")
    for card in ("2S", "3H", "4H"):  # indicator 2: two burnt
        rig.call("POST", "/tables/bac-1/cards", "supervisor", {"card": card})
    _credit(rig, 10)
    rig.call("POST", "/tables/bac-1/betting/open", "dealer")
    placed = []
    for batch in range(3):  # 1,234 bets in three requests (several log events each)
        bets = [
            {
                "key": f"k{batch}-{i}",
                "account": f"a{i % 10}",
                "type": ("player", "banker", "tie")[i % 3],
                "stake": 100 + i,
            }
            for i in range(400 if batch < 2 else 434)
        ]
        answer = rig.call("POST", "/tables/bac-1/bets", "operator", {"bets": bets})
        assert {r["status"] for r in answer["results"]} == {"placed"}
        placed += [r["bet_id"] for r in answer["results"]]
    assert len(placed) == 1234
    rig.call("POST", "/tables/bac-1/betting/close", "dealer")
    for card in ("9S", "2H", "KD", "5C"):  # player 9 natural: every bet settles
        rig.call("POST", "/tables/bac-1/cards", "supervisor", {"card": card})

    [record] = rig.call("GET", "/tables/bac-1/recall?last=1", "regulator")["rounds"]
    assert record["bets_total"] == 1234 and len(record["bets"]) == 500
    assert record["settlement_total"] == 1234 and len(record["settlement"]) == 500
    assert record["bets_next"] and record["settlement_next"]
    assert len(record["settle_input"]["bets"]) == 1234  # the settle input is never cut

    rid = record["round_id"]
    for section, first, cursor in (
        ("bets", record["bets"], record["bets_next"]),
        ("settlement", record["settlement"], record["settlement_next"]),
    ):
        seen = [b["bet_id"] for b in first]
        pages = 0
        while cursor:
            got = rig.call(
                "GET", f"/tables/bac-1/recall/{rid}/{section}?after={cursor}", "regulator"
            )
            assert got["section"] == section and len(got["items"]) <= 500
            seen += [b["bet_id"] for b in got["items"]]
            cursor = got["next"]
            pages += 1
        assert pages == 2
        assert seen == placed  # every bet once, in the order placed
    # small pages cross the log events' boundaries without a gap or a repeat
    walked, cursor = [], ""
    while True:
        query = f"?limit=97&after={cursor}" if cursor else "?limit=97"
        got = rig.call("GET", f"/tables/bac-1/recall/{rid}/bets{query}", "regulator")
        walked += [b["bet_id"] for b in got["items"]]
        if not got["next"]:
            break
        cursor = got["next"]
    assert walked == placed
    lines = rig.call("GET", f"/tables/bac-1/recall/{rid}/settlement?limit=1000", "regulator")
    assert {x["result"] for x in lines["items"]} <= {"win", "lose", "push"}

    rig.call("GET", f"/tables/bac-1/recall/{rid}/bets?after=nonsense", "regulator", status=422)
    rig.call("GET", f"/tables/bac-1/recall/{rid}/bets?limit=0", "regulator", status=422)
    rig.call("GET", f"/tables/bac-1/recall/{rid}/stakes", "regulator", status=422)
    rig.call("GET", f"/tables/bj-1/recall/{rid}/bets", "regulator", status=404)
    rig.call("GET", "/tables/bac-1/recall/no-round/bets", "regulator", status=404)
    rig.call("GET", f"/tables/bac-1/recall/{rid}/bets", "dealer", status=403)
