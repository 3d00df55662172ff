"""Blackjack and Xì Dách in Chromium: the dealer console follows each blackjack turn with
its timer and legal actions; the overlay keeps a Xì Dách hidden card face down."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in, wait_for

# seat 1: 8S, dealer: 9D, seat 1: 7C (15: a decision), then the dealer's 8H (17: stands)
BLACKJACK = ["8S", "9D", "7C", "8H"] + ["2C", "3D", "4H", "5S", "6C", "7D", "9S", "TD"] * 4


def test_a_blackjack_round_shows_each_turn_and_its_timer(make_studio: Any, browser: Any) -> None:
    studio = make_studio(
        BLACKJACK,
        table_id="bj-1",
        game="blackjack",
        game_rules={"decision_seconds": 30, "follow_seconds": 5},
    )
    studio.ready_shoe()
    t = studio.table_id
    studio.call("POST", "/accounts/alice/credit", "operator", {"amount": 10_000, "reference": "a"})
    studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": 1, "account": "alice"})

    page = studio.page(browser, "/console/dealer")
    sign_in(page, studio.tokens["dealer"])
    expect(page.locator("#table-badge")).to_contain_text("Blackjack")
    page.click("#open-betting")
    expect(page.locator("#phase")).to_have_attribute("data-phase", "betting")
    bet = [{"key": "a1", "account": "alice", "type": "main", "stake": 1000, "seat": 1}]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bet})
    page.click("#close-betting")
    page.click("dialog [data-action=confirm]")
    expect(page.locator("#next-target")).to_have_text("Seat 1 · hand 1")
    assert studio.deal() == "8S"
    expect(page.locator("#next-target")).to_have_text("Dealer")
    assert studio.deal() == "9D"
    expect(page.locator("#next-target")).to_have_text("Seat 1 · hand 1")
    assert studio.deal() == "7C"

    # seat 1 has 15: its decision, with the recorded deadline counting down
    expect(page.locator("#instruction")).to_contain_text("Waiting for a decision")
    expect(page.locator("#next-target")).to_have_text("Seat 1")
    expect(page.locator("[data-field=turn]")).to_contain_text("Seat 1")
    expect(page.locator("#turn-timer")).to_have_text(re.compile(r"^(2\d|30) s$"))
    legal = page.locator("[data-legal='seat:1']")
    expect(legal.locator("[data-move=hit]")).to_have_text("Hit")
    expect(legal.locator("[data-move=stand]")).to_have_text("Stand")
    expect(page.locator("[data-seat='1']")).to_have_class("seat active")
    expect(page.locator("[data-seat='1'] [data-card]")).to_have_count(2)
    expect(page.locator("[data-hand=dealer] [data-card]")).to_have_count(1)
    first = page.locator("#turn-timer").inner_text()
    wait_for(lambda: page.locator("#turn-timer").inner_text() != first, what="timer ticks")
    studio.shot(page, "dealer-blackjack-turn")

    # the dealer reports from blackjack's own catalogue (seed 000's errors), not baccarat's
    page.click("#report")
    dialog = page.locator("#report-dialog")
    for kind in ("misdeal", "wrong_position", "cards_exposed", "system_error", "other"):
        expect(dialog.locator(f"[data-kind={kind}]")).to_contain_text("every stake")
    for kind in ("missed_scan", "multi_pull", "card_not_owed"):
        expect(dialog.locator(f"[data-kind={kind}]")).to_have_count(0)
    dialog.locator("[data-action=cancel]").click()
    expect(page.locator("#report-dialog")).to_have_count(0)

    body = {"actor": "seat:1", "action": "stand", "account": "alice"}
    studio.call("POST", f"/tables/{t}/actions", "operator", body)
    expect(page.locator("#next-target")).to_have_text("Dealer")
    expect(page.locator("[data-field=turn]")).to_have_count(0)
    assert studio.deal() == "8H"  # dealer 17 stands; seat 1's 15 loses
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")
    expect(page.locator("#phase")).to_have_attribute("data-phase", "settled")
    expect(page.locator("[data-total=dealer]")).to_contain_text("17")


# counter-clockwise: seat 2 TS, seat 1 9D (hidden bet), banker TC (face down), then
# seat 2 7H, seat 1 8S, banker 7D; all three stand on 17.
XIDACH = ["TS", "9D", "TC", "7H", "8S", "7D", "2C", "3D", "4H", "5S", "6C", "AD", "KC"]


def test_a_xidach_hidden_card_stays_face_down_on_the_overlay(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio(
        XIDACH,
        table_id="xd-1",
        game="xidach",
        profile="forced-draw",
        limits={"min_stake": 100, "max_stake": 5000},
    )
    studio.ready_shoe()
    t = studio.table_id
    for account in ("alice", "bob"):
        body = {"amount": 10_000, "reference": account}
        studio.call("POST", f"/accounts/{account}/credit", "operator", body)
    studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": 1, "account": "alice"})
    studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": 2, "account": "bob"})
    overlay = studio.page(browser, f"/overlay/{t}?lang=vi", width=1920, height=1080)
    expect(overlay.locator("#stream-badge")).to_have_attribute("data-status", "live")
    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    bets = [
        {"key": "a1", "account": "alice", "type": "hidden", "stake": 1000, "seat": 1},
        {"key": "b1", "account": "bob", "type": "main", "stake": 1000, "seat": 2},
    ]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets})
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    for card in XIDACH[:6]:
        assert studio.deal() == card

    banker = overlay.locator("[data-hand=banker]")
    expect(banker).to_contain_text("Nhà cái")
    expect(banker.locator("[data-card]")).to_have_count(2)
    expect(banker.locator("[data-card=hidden]")).to_have_count(1)  # the face-down card
    expect(banker.locator("[data-card='TC']")).to_have_count(0)
    seat1 = overlay.locator("[data-hand^='seat-1-']")
    expect(seat1.locator("[data-card=hidden]")).to_have_count(2)  # a hidden seat's hand
    seat2 = overlay.locator("[data-hand^='seat-2-']")
    expect(seat2.locator("[data-card='TS']")).to_have_count(1)
    expect(seat2.locator("[data-card='7H']")).to_have_count(1)
    assert "9D" not in overlay.content() and "TC" not in overlay.content()
    studio.shot(overlay, "overlay-xidach")

    for actor, account in (("seat:2", "bob"), ("seat:1", "alice")):
        body = {"actor": actor, "action": "stand", "account": account}
        studio.call("POST", f"/tables/{t}/actions", "operator", body)
    body = {"actor": "banker", "action": "check", "target": "all"}  # the house's move:
    studio.call("POST", f"/tables/{t}/actions", "dealer", body)  # the dealer confirms it
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")
    expect(banker.locator("[data-card='TC']")).to_have_count(1)  # revealed once settled
    expect(seat1.locator("[data-card='9D']")).to_have_count(1)
