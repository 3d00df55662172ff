"""The supervisor console in Chromium: a missed scan reported by the dealer is resolved
by picking the card at its shoe-order index; the round then completes by the rules."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in, wait_for


def test_missed_scan_resolved_by_picking_the_card(make_studio: Any, browser: Any) -> None:
    studio = make_studio()
    studio.ready_shoe()
    t = studio.table_id
    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    assert studio.deal() == "2S"  # P1
    assert studio.deal(scan=False) == "5H"  # B1 leaves the shoe without passing the reader

    dealer = studio.page(browser, "/console/dealer")
    sign_in(dealer, studio.tokens["dealer"])
    expect(dealer.locator("#next-target")).to_have_attribute("data-code", "B1")
    dealer.keyboard.press("r")  # the dealer reports it, by keyboard alone
    dealer.click("dialog [data-kind=missed_scan]")
    dealer.click("dialog [data-action=confirm]")
    expect(dealer.locator("#paused-banner")).to_be_visible()
    expect(dealer.locator("#paused-reason")).to_contain_text("Missed scan")
    expect(dealer.locator("#instruction")).to_contain_text("paused")

    page = studio.page(browser, "/console/supervisor", width=1440, height=1000)
    sign_in(page, studio.tokens["sup-bao"])
    tile = page.locator(f"[data-table={t}]")
    expect(tile.locator("[data-field=dealer]")).to_have_text("dealer-ann")
    expect(tile.locator("[data-field=incidents]")).to_have_text("1")
    expect(tile.locator("[data-field=reader]")).to_contain_text("online")
    incident = page.locator("[data-kind=missed_scan]")
    expect(incident).to_be_visible()
    expect(incident.locator(".procedure")).to_contain_text("rule 6")
    # the same queue in Vietnamese: the catalogue's procedure as the rule texts word it
    page.click("#lang-switch [data-lang=vi]")
    expect(incident.locator(".kind")).to_have_text("Bỏ sót lá bài khi quét")
    expect(incident.locator(".procedure")).to_contain_text("quy tắc 6: giám sát nhập lá bài bị sót")
    expect(tile.locator("[data-field=reader]")).to_have_text("Đầu đọc hoạt động")
    page.click("#lang-switch [data-lang=en]")
    expect(incident.locator(".procedure")).to_contain_text("rule 6")
    expect(incident).to_contain_text("dealer-ann")
    expect(incident.locator("select[name=index]")).to_have_value("1")
    incident.locator("[data-rank='5']").click()
    incident.locator("[data-suit=H]").click()
    expect(incident.locator("[data-field=picked]")).to_have_attribute("data-card", "5H")
    incident.locator("textarea[name=note]").fill("5H left the shoe unread; seen on the table")
    studio.shot(page, "supervisor-missed-scan")
    incident.locator("[data-action=resolve]").click()
    page.click("dialog [data-action=confirm]")
    expect(page.locator("[data-kind=missed_scan]")).to_have_count(0)
    resolved = page.locator("#timeline [data-status=resolved]")
    expect(resolved).to_contain_text("sup-bao")
    expect(resolved).to_contain_text("5H left the shoe unread")
    expect(resolved).to_contain_text("UTC")  # when, with its zone (the browser runs in UTC)
    # who, in words: the dealer raised it, the supervisor resolved it
    expect(resolved.locator("[data-field=raised-by]")).to_have_text("raised by Dealer dealer-ann")
    expect(resolved.locator("[data-field=resolved-by]")).to_contain_text("Supervisor sup-bao")
    studio.shot(page, "supervisor-timeline")

    # the dealer console is live again with the card in place
    expect(dealer.locator("#paused-banner")).to_be_hidden()
    expect(dealer.locator("[data-position=B1] [data-card]")).to_have_attribute("data-card", "5H")
    expect(dealer.locator("#next-target")).to_have_attribute("data-code", "P2")
    for card in ("KD", "TC", "3S"):
        assert studio.deal() == card
    expect(dealer.locator("#result [data-result]")).to_have_attribute("data-result", "tie")
    rnd = wait_for(lambda: studio.summary()["round"]["phase"] == "settled" and studio.summary())
    assert rnd["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]
    resolved = studio.call("GET", "/incidents?status=resolved", "supervisor")
    assert [(i["kind"], i["raised_by"], i["resolved_by"]) for i in resolved] == [
        ("missed_scan", "dealer:dealer-ann", "supervisor:sup-bao")
    ]


def test_a_void_above_the_threshold_needs_a_second_supervisor(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio(void_approval_above=500)
    studio.ready_shoe()
    t = studio.table_id
    studio.call("POST", "/accounts/acct-1/credit", "operator", {"amount": 10_000, "reference": "c"})
    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    bet = [{"key": "k1", "account": "acct-1", "type": "banker", "stake": 1000}]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bet})
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    assert studio.deal() == "2S"

    first = studio.page(browser, "/console/supervisor", width=1440, height=1000)
    sign_in(first, studio.tokens["sup-bao"])
    tile = first.locator(f"[data-table={t}]")
    expect(tile.locator("[data-field=approval-needed]")).to_contain_text("1,000")
    tile.locator("[data-action=void]").click()
    first.fill("dialog textarea[name=reason]", "dealer dropped the shoe")
    first.click("dialog [data-action=confirm]")
    request = tile.locator("[data-request]")
    expect(request).to_contain_text("sup-bao")
    expect(request.locator("[data-action=approve-void]")).to_be_disabled()  # not by themself
    assert studio.summary()["round"]["phase"] == "dealing"  # nothing voided yet

    second = studio.page(browser, "/console/supervisor", width=1440, height=1000)
    sign_in(second, studio.tokens["sup-chi"])
    other = second.locator(f"[data-table={t}] [data-request] [data-action=approve-void]")
    expect(other).to_be_enabled()
    studio.shot(second, "supervisor-void-approval")
    other.click()
    second.click("dialog [data-action=confirm]")
    wait_for(lambda: studio.summary()["round"]["phase"] == "voided", what="voided")
    expect(first.locator(f"[data-table={t}] [data-request]")).to_have_count(0)
    events = studio.call("GET", f"/audit/events?table_id={t}", "regulator")
    kinds = [(e["type"], e["actor"]) for e in events if e["type"].startswith(("void_", "round_v"))]
    assert kinds == [
        ("void_requested", "supervisor:sup-bao"),
        ("void_approved", "supervisor:sup-chi"),
        ("round_voided", "supervisor:sup-chi"),
    ]
    voided = next(e for e in events if e["type"] == "round_voided")
    assert "requested by sup-bao, approved by sup-chi" in voided["payload"]["reason"]
    refunds = [e for e in events if e["type"] == "bets_refunded"]
    assert [r["stake"] for e in refunds for r in e["payload"]["refunds"]] == [1000]
