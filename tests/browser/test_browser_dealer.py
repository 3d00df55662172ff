"""The dealer console in Chromium: sign-in, a baccarat round played by clicking, cards
from the virtual shoe appearing at their positions, the stream resumed after a drop."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in, wait_for


def test_baccarat_round_from_the_dealer_console(make_studio: Any, browser: Any) -> None:
    studio = make_studio()
    studio.ready_shoe()
    page = studio.page(browser, "/console/dealer")

    # a wrong token gets a clear message and no console
    sign_in(page, "lt_not-a-token")
    expect(page.locator("#signin-error")).to_contain_text("wrong or has been revoked")
    expect(page.locator("#console")).to_be_hidden()

    sign_in(page, studio.tokens["dealer"])
    expect(page.locator("#console")).to_be_visible()
    expect(page.locator("#stream-badge")).to_have_attribute("data-status", "live")
    expect(page.locator("#instruction")).to_contain_text("Open betting")
    # the token is kept in the tab's session storage, never in the address
    assert page.evaluate("sessionStorage.getItem('lt.token')") == studio.tokens["dealer"]
    assert "lt_" not in page.url

    # signing in recorded the dealer on duty in the audit log
    events = studio.call("GET", "/audit/events?table_id=bac-1", "regulator")
    duty = [e for e in events if e["type"] == "dealer_signed_in"]
    assert [e["payload"]["dealer"] for e in duty] == ["dealer-ann"]

    page.click("#open-betting")
    expect(page.locator("#phase")).to_have_attribute("data-phase", "betting")
    expect(page.locator("#countdown")).to_contain_text("s")
    page.click("#close-betting")  # cannot be undone: asks first
    page.click("dialog [data-action=confirm]")
    expect(page.locator("#phase")).to_have_attribute("data-phase", "dealing")
    expect(page.locator("#next-target")).to_have_text("Player 1")
    expect(page.locator("#next-target")).to_have_attribute("data-code", "P1")

    expected = {"P1": "2S", "B1": "5H", "P2": "KD", "B2": "TC"}
    for position, card in expected.items():
        assert studio.deal() == card
        expect(page.locator(f"[data-position={position}] [data-card]")).to_have_attribute(
            "data-card", card
        )
        expect(page.locator("#last-card [data-card]")).to_have_attribute("data-card", card)
        expect(page.locator("#last-source")).to_contain_text("shoe")
    expect(page.locator("#next-target")).to_have_text("Player 3")
    expect(page.locator("[data-total=player]")).to_have_text("2")
    expect(page.locator("[data-total=banker]")).to_have_text("5")
    studio.shot(page, "dealer-dealing")

    # the connection drops twice with nothing new to send: the second reconnect waits
    # longer (a connection that opens but delivers nothing does not reset the backoff)
    for connects in (2, 3):
        page.evaluate("window.LT.streams[0].drop()")

        def connected(n: int = connects) -> bool:
            return bool(page.evaluate("window.LT.streams[0].connects") == n)

        wait_for(connected, what=f"connection {connects}")
    assert page.evaluate("window.LT.streams[0].waits") == [400, 800]
    # the connection drops: the console resumes from its last event, none shown twice
    page.evaluate("window.LT.streams[0].drop()")
    assert studio.deal() == "3S"  # dealt while the console may be offline
    expect(page.locator("[data-position=P3] [data-card]")).to_have_attribute("data-card", "3S")
    expect(page.locator("#result [data-result]")).to_have_attribute("data-result", "tie")
    expect(page.locator("#stream-badge")).to_have_attribute("data-status", "live")
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")
    assert page.evaluate("window.LT.streams[0].connects") == 4
    assert page.evaluate("window.LT.streams[0].waits") == [400, 800, 1600]
    first = page.evaluate("window.LT.streams[0].first")
    logged = [
        e["seq"]
        for e in studio.call("GET", f"/audit/events?table_id=bac-1&after_seq={first}", "regulator")
    ]
    wait_for(lambda: page.evaluate("window.LT.streams[0].seqs") == logged, what="every event once")
    # the events that connection delivered reset the backoff: the next drop waits 400 ms
    page.evaluate("window.LT.streams[0].drop()")
    wait_for(lambda: page.evaluate("window.LT.streams[0].connects") == 5, what="connection 5")
    assert page.evaluate("window.LT.streams[0].waits") == [400, 800, 1600, 400]
    expect(page.locator("#instruction")).to_contain_text("Open betting")
    studio.shot(page, "dealer-result")
