"""The pit supervisor's money and hands, and the recall that finds any round, in Chromium.

- The supervisor's tile shows every card on the table, the seats and who holds them, and
  stakes in play equal to the sum of the round's open stakes (by bet type), with the
  bets above the supervisor's threshold listed; after the round, the table's result.
- The recall finds a round by its id and, for a regulator, by an account; every step in
  plain words with the rules as the actor of what the rules did; dates with their zone;
  and a round saved as one self-contained HTML file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in, wait_for

# seat 1 TS QH (20), seat 2 AH KC (blackjack), seat 3 5C 9S (14, hits 8D: bust); the
# dealer 9D 8C: 17.
DECK = ["TS", "AH", "5C", "9D", "QH", "KC", "9S", "8D", "8C"] + ["2C", "3D", "4H"] * 8
BETS = [
    {"key": "a", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
    {"key": "b", "account": "bob", "type": "main", "stake": 500, "seat": 2},
    {"key": "bp", "account": "bob", "type": "pair", "stake": 200, "seat": 2},
    {"key": "c", "account": "carol", "type": "main", "stake": 2500, "seat": 3},
]


def _open_stakes(studio: Any, round_id: str) -> int:
    detail = studio.call("GET", f"/rounds/{round_id}", "supervisor")
    return sum(b["stake"] for b in detail["bets"] if b["status"] == "open")


def test_the_pit_sees_money_hands_and_seats_and_the_recall_finds_the_round(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio(
        DECK,
        table_id="bj-1",
        game="blackjack",
        game_rules={"decision_seconds": 60, "follow_seconds": 5},
    )
    studio.ready_shoe()
    t = studio.table_id
    for seat, account in ((1, "alice"), (2, "bob"), (3, "carol")):
        studio.call(
            "POST",
            f"/accounts/{account}/credit",
            "operator",
            {"amount": 50_000, "reference": account},
        )
        studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": seat, "account": account})
    dealer = studio.page(browser, "/console/dealer", width=1280, height=800)
    sign_in(dealer, studio.tokens["dealer"])  # on duty from now
    expect(dealer.locator("#console")).to_be_visible()

    opened = studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": BETS})
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    for card in DECK[:7]:
        assert studio.deal() == card

    page = studio.page(browser, "/console/supervisor", width=1920, height=1080)
    sign_in(page, studio.tokens["sup-bao"])
    page.fill("#large-above", "2000")
    page.dispatch_event("#large-above", "change")
    tile = page.locator(f"[data-table={t}]")
    in_play = _open_stakes(studio, opened["round_id"])
    assert in_play == 4200
    expect(tile.locator("[data-field=in-play]")).to_have_text("4,200")
    expect(tile.locator("[data-type=main]")).to_have_text("Main bet 4,000")
    expect(tile.locator("[data-type=pair]")).to_have_text("Pair 200")
    expect(page.locator("[data-field=pit-in-play]")).to_have_text("4,200")
    large = tile.locator("[data-field=large-bets] [data-bet]")
    expect(large).to_have_count(1)
    expect(large).to_contain_text("2,500")
    expect(large).to_contain_text("carol")
    # the hands (every card), the seats and who holds them, the dealer and since when
    expect(tile.locator("[data-field=hands] [data-card]")).to_have_count(7)
    expect(tile.locator("[data-seat-holder='3']")).to_contain_text("carol")
    expect(tile.locator("[data-field=dealer]")).to_have_text("dealer-ann")
    expect(tile.locator("[data-field=dealer-since]")).to_contain_text("UTC")
    expect(tile.locator("[data-field=phase]")).to_contain_text("1 ·")
    studio.shot(page, "supervisor-blackjack-2-decision")

    for actor, action, account in (("seat:1", "stand", "alice"), ("seat:3", "hit", "carol")):
        body = {"actor": actor, "action": action, "account": account}
        studio.call("POST", f"/tables/{t}/actions", "operator", body)
    assert studio.deal() == "8D"
    assert studio.deal() == "8C"
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")
    # alice wins 1000 (returns 2000), bob's blackjack 500 returns 1250, his pair (A, K) is
    # lost, carol's 2500 is lost: the house +4200 - 2000 - 1250 = +950
    expect(tile.locator("[data-field=in-play]")).to_have_text("0")
    expect(tile.locator("[data-field=result-shoe]")).to_have_text("+950")
    expect(tile.locator("[data-field=result-day]")).to_have_text("+950")
    studio.shot(page, "supervisor-blackjack-3-result")

    # the recall: by round id, then by account (a regulator's search)
    recall = studio.page(browser, f"/recall/{t}", width=1920, height=1080)
    sign_in(recall, studio.tokens["regulator"])
    expect(recall.locator("article.round-record")).to_have_count(1)
    recall.fill("#search-form [name=round_id]", opened["round_id"])
    recall.click("#search-form [type=submit]")
    picked = recall.locator("#picked article.round-record")
    expect(picked).to_have_attribute("data-round", opened["round_id"])
    steps = picked.locator("[data-section=steps] tbody tr")
    result = steps.filter(has_text="Round result")
    expect(result).to_have_count(1)
    expect(result).to_contain_text("Dealer 9♦ 8♣ = 17")
    expect(result).to_contain_text("Table rules")  # the rules settle, not the reader
    # each seat's fate, from its bet's settlement line
    expect(result).to_contain_text("Seat 1: 10♠ Q♥ = 20 (wins)")
    expect(result).to_contain_text("Seat 3: 5♣ 9♠ 8♦ = 22 bust (loses)")
    expect(steps.filter(has_text="Round settled")).to_contain_text("staked 4,200")
    # four bets in one step: their count and sum; the settlement: what it returned
    expect(steps.filter(has_text="Bets placed")).to_contain_text("4 bets, 4,200 staked")
    expect(steps.filter(has_text="Bets settled").first).to_contain_text("4 bets settled, 3,250")
    expect(steps.filter(has_text="Seat 1: stand")).to_have_count(1)
    expect(steps.first.locator("td").nth(1)).to_contain_text("UTC")
    expect(picked.locator("[data-field=table-round]")).to_have_text("round 1 at the table")
    studio.shot(recall, "recall-blackjack-by-round")

    recall.fill("#search-form [name=round_id]", "")
    recall.fill("#search-form [name=account]", "carol")
    recall.click("#search-form [type=submit]")
    found = recall.locator("#found [data-found]")
    expect(found).to_have_count(1)
    expect(found).to_contain_text(opened["round_id"])
    expect(found.locator("[data-field=account-bets]")).to_have_text("Main bet 2,500 → 0")
    recall.evaluate("window.scrollTo(0, 0)")
    studio.shot(recall, "recall-blackjack-by-account")
    found.locator("[data-action=open-round]").click()

    # saved as one self-contained file: no script, nothing fetched, the steps in words
    with recall.expect_download() as download:
        picked.locator("[data-action=export]").click()
    html = Path(download.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "<script" not in html
    assert 'src="' not in html and "href=" not in html  # nothing outside the file
    assert opened["round_id"] in html and "Dealer 9♦ 8♣ = 17" in html and "UTC" in html
    assert "Table rules" in html and "carol" in html

    # a supervisor finds rounds by id, table and time, not by account
    sup = studio.page(browser, f"/recall/{t}", width=1280, height=800)
    sign_in(sup, studio.tokens["sup-bao"])
    expect(sup.locator("#account-field")).to_be_hidden()
    refused = studio.http.get(
        "/api/v1/recall/search?account=carol",
        headers={"Authorization": f"Bearer {studio.tokens['supervisor']}"},
    )
    assert refused.status_code == 403

    # the operator owning carol: her rounds, her bets and returns, saved as one file; not
    # the round's other players nor its full record
    op = studio.page(browser, f"/recall/{t}", width=1280, height=800)
    sign_in(op, studio.tokens["operator"])
    op.fill("#search-form [name=account]", "carol")
    op.click("#search-form [type=submit]")
    mine = op.locator("#found [data-found]")
    expect(mine).to_have_count(1)
    expect(mine.locator("[data-field=account-bets]")).to_have_text("Main bet 2,500 → 0")
    expect(mine.locator("[data-action=open-round]")).to_have_count(0)
    shown = op.locator("#console").inner_text()
    assert "alice" not in shown and "bob" not in shown and "4,200" not in shown, shown
    studio.shot(op, "recall-operator-by-account")
    with op.expect_download() as download:
        op.click("[data-action=export-found]")
    html = Path(download.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "<script" not in html and 'src="' not in html
    assert opened["round_id"] in html and "Main bet 2,500 → 0" in html and "UTC" in html
    assert "alice" not in html and "bob" not in html


# room deals clockwise: seat 1 9S, seat 2 5D, the banker (seat 9) KH face down, then
# seat 1 8C, seat 2 6H, the banker 7S.
ROOM = ["9S", "5D", "KH", "8C", "6H", "7S", "2C", "3D", "4H", "5S", "6C", "AD", "TC"]


def test_the_pit_sees_a_seated_xidach_bank_its_holder_and_balance(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio(
        ROOM,
        table_id="xd-room",
        game="xidach",
        profile="room",
        game_rules={"banker": "seated"},
        limits={"min_stake": 100, "max_stake": 2000},
        bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
    )
    studio.ready_shoe()
    t = studio.table_id
    for seat, account in ((1, "an"), (2, "binh"), (9, "cuong")):
        body = {"amount": 50_000, "reference": account}
        studio.call("POST", f"/accounts/{account}/credit", "operator", body)
        studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": seat, "account": account})
    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    bets = [
        {"key": "bank", "account": "cuong", "type": "bank", "stake": 30_000, "seat": 9},
        {"key": "a", "account": "an", "type": "main", "stake": 1500, "seat": 1},
        {"key": "b", "account": "binh", "type": "main", "stake": 800, "seat": 2},
    ]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets})  # all bet: closes
    for card in ROOM[:6]:
        assert studio.deal() == card

    page = studio.page(browser, "/console/supervisor?lang=vi", width=1920, height=1080)
    sign_in(page, studio.tokens["sup-bao"])
    tile = page.locator(f"[data-table={t}]")
    expect(tile.locator("[data-field=bank]")).to_contain_text("cuong ở cửa 9: 30.000")
    # the bank is the banker's balance, not a stake in play: the punters' 2,300 are
    expect(tile.locator("[data-field=in-play]")).to_have_text("2.300")
    expect(tile.locator("[data-hand=banker] [data-card='KH']")).to_have_count(1)  # all cards
    studio.shot(page, "supervisor-xidach-room-bank-vi")
