"""The studio overlay (public, no token) with its result banner and roads, and the
regulator recall page listing ten rounds step by step."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in


def test_overlay_shows_the_result_and_the_big_road(make_studio: Any, browser: Any) -> None:
    studio = make_studio()
    studio.ready_shoe()
    page = studio.page(browser, "/overlay/bac-1?lang=en", width=1920, height=1080)
    expect(page.locator("#stream-badge")).to_have_attribute("data-status", "live")
    first = studio.play_round()  # 2S 5H KD TC 3S: a tie, 5-5
    assert first["round"]["outcome"]["winner"] == "tie"
    expect(page.locator("#ov-banner")).to_have_attribute("data-result", "tie")
    expect(page.locator("[data-position=P3] [data-card]")).to_have_attribute("data-card", "3S")
    # a tie before any banker or player win: one placeholder cell carrying the tie
    big_road = page.locator("#big-road .road-cell")
    expect(big_road).to_have_count(1)
    expect(big_road.first).to_have_attribute("data-ties", "1")
    expect(page.locator("#bead-plate .road-cell")).to_have_count(1)

    second = studio.play_round()  # 9S 2H KD 5C: player 9 natural
    assert second["round"]["outcome"]["winner"] == "player"
    expect(page.locator("#ov-banner")).to_have_attribute("data-result", "player")
    expect(page.locator("#ov-banner")).to_contain_text("PLAYER WINS 9–7")
    expect(big_road).to_have_count(1)
    expect(big_road.first).to_have_attribute("data-winner", "player")
    expect(big_road.first).to_have_attribute("data-ties", "1")  # the leading tie
    expect(page.locator("#bead-plate .road-cell")).to_have_count(2)
    expect(page.locator("[data-count=player]")).to_contain_text("1")
    expect(page.locator("[data-count=tie]")).to_contain_text("1")
    for _ in range(4):
        studio.play_round()
    roads = studio.http.get("/api/v1/tables/bac-1/roads").json()
    assert roads["counts"]["rounds"] == 6
    expect(page.locator("#ov-roads")).to_have_attribute("data-rounds", "6")
    expect(page.locator("#big-road .road-cell")).to_have_count(len(roads["big_road"]))
    expect(page.locator("#big-eye-boy .road-cell")).to_have_count(len(roads["big_eye_boy"]))
    last = roads["big_road"][-1]
    cell = page.locator(f"#big-road .road-cell[data-round='{last['round']}']")
    expect(cell).to_have_attribute("data-winner", last["winner"])
    studio.shot(page, "overlay")

    # Vietnamese feed for another market: the same table, the rule texts' terms
    vi = studio.page(browser, "/overlay/bac-1?lang=vi", width=1920, height=1080)
    expect(vi.locator("#ov-title")).to_contain_text("Bàn bac-1")
    expect(vi.locator("[data-hand=banker]")).to_contain_text("Nhà cái")
    expect(vi.locator("[data-hand=player]")).to_contain_text("Nhà con")
    expect(vi.locator(".road .title").first).to_have_text("Bảng hạt")


def test_recall_lists_ten_rounds_with_every_step(make_studio: Any, browser: Any) -> None:
    studio = make_studio(betting_seconds=30)
    studio.ready_shoe()
    studio.call(
        "POST", "/accounts/acct-1/credit", "operator", {"amount": 100_000, "reference": "r1"}
    )
    dealer = studio.page(browser, "/console/dealer")
    sign_in(dealer, studio.tokens["dealer"])  # the dealer on duty, named in every round
    expect(dealer.locator("#console")).to_be_visible()
    bet = [{"key": "k1", "account": "acct-1", "type": "banker", "stake": 1000}]
    rounds = [studio.play_round(bet if i == 10 else None) for i in range(11)]
    assert all(r["round"]["phase"] == "settled" for r in rounds)

    # a dealer may not open the recall; a regulator may
    page = studio.page(browser, "/recall/bac-1")
    sign_in(page, studio.tokens["dealer"])
    expect(page.locator("#signin-error")).to_contain_text("this page is for regulator")
    sign_in(page, studio.tokens["regulator"])
    records = page.locator("article.round-record")
    expect(records).to_have_count(10)
    newest = records.first
    expect(newest).to_have_attribute("data-round", rounds[-1]["round"]["round_id"])
    expect(newest.locator("[data-field=dealer]")).to_contain_text("dealer-ann")
    steps = newest.locator("[data-section=steps] tbody tr")
    expect(steps.filter(has_text="Card dealt")).to_have_count(len(rounds[-1]["round"]["cards"]))
    expect(steps.filter(has_text="Card dealt").first).to_contain_text("P1")
    expect(steps.filter(has_text="Card dealt").first).to_contain_text("bac-1-shoe seq")
    newest.locator("[data-section=bets] summary").click()
    expect(newest.locator("[data-section=bets] tbody tr")).to_have_count(1)
    expect(newest.locator("[data-section=bets]")).to_contain_text("acct-1")
    newest.locator("[data-section=settlement] summary").click()
    expect(newest.locator("[data-section=settlement] tbody tr")).to_have_count(1)
    newest.locator("[data-section=settle_input] summary").click()
    settle = json.loads(newest.locator("[data-field=settle-input]").inner_text())
    assert settle["cards"] == rounds[-1]["round"]["cards"]
    assert settle["bets"] == [{"id": settle["bets"][0]["id"], "type": "banker", "stake": 1000}]
    oldest = records.last
    expect(oldest).to_have_attribute("data-round", rounds[1]["round"]["round_id"])
    expect(newest.locator("[data-field=outcome]")).to_contain_text("WINS")
    page.evaluate("window.scrollTo(0, 0)")
    studio.shot(page, "recall")
