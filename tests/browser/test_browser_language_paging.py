"""The consoles in Vietnamese (a switch on the page, remembered by the browser) and the
recall listing every one of a round's bets, however many, page by page."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in

ENGLISH = ("Open betting", "Close betting", "Report incident", "Player", "Banker", "Sign out")


def test_the_dealer_console_switches_to_vietnamese_and_keeps_it(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio()
    studio.ready_shoe()
    page = studio.page(browser, "/console/dealer")
    page.click("#lang-switch [data-lang=vi]")  # before signing in: the form is Vietnamese too
    expect(page.locator("#signin-section h1")).to_have_text("Đăng nhập")
    expect(page.locator("#signin-form label")).to_have_text("Mã truy cập")
    sign_in(page, studio.tokens["dealer"])
    expect(page.locator("#console")).to_be_visible()

    def vietnamese() -> None:
        expect(page.locator("html")).to_have_attribute("lang", "vi")
        expect(page.locator(".topbar .brand")).to_have_text("Màn hình chia bài")
        expect(page.locator("#instruction")).to_have_text("Mở đặt cược cho ván tiếp theo")
        expect(page.locator("#open-betting")).to_contain_text("Mở đặt cược")
        expect(page.locator("#report")).to_contain_text("Báo sự cố")
        expect(page.locator("#reader-badge")).to_have_text("Đầu đọc hoạt động")
        expect(page.locator("#stream-badge")).to_have_text("Trực tiếp")
        expect(page.locator("#signout")).to_have_text("Đăng xuất")
        assert page.title().startswith("Màn hình chia bài")

    vietnamese()
    studio.call("POST", f"/tables/{studio.table_id}/betting/open", "dealer")
    studio.call("POST", f"/tables/{studio.table_id}/betting/close", "dealer")
    expect(page.locator("#phase")).to_contain_text("Đang chia bài")
    expect(page.locator("#instruction")).to_have_text("Chia lá tiếp theo cho")
    expect(page.locator("#next-target")).to_have_text("Nhà con 1")
    expect(page.locator("[data-hand=player]")).to_contain_text("Nhà con")
    expect(page.locator("[data-hand=banker]")).to_contain_text("Nhà cái")
    text = page.locator("body").inner_text()
    assert not [w for w in ENGLISH if w in text], text

    # the report dialog: the game's catalogue, its procedures in Vietnamese
    page.keyboard.press("r")
    dialog = page.locator("#report-dialog")
    expect(dialog.locator("[data-kind=missed_scan]")).to_contain_text("Bỏ sót lá bài khi quét")
    expect(dialog.locator("[data-kind=missed_scan]")).to_contain_text("quy tắc 6")
    kinds = studio.call("GET", f"/console/tables/{studio.table_id}/view", "dealer")
    expect(dialog.locator("[data-kind]")).to_have_count(len(kinds["dealer_incidents"]))
    assert len(kinds["dealer_incidents"]) >= 6  # the baccarat catalogue's dealer kinds
    studio.shot(page, "dealer-vi-report")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    # by keyboard alone: R, the kind's number, then Enter confirms
    page.keyboard.press("r")
    missed = [
        k["kind"]
        for k in studio.call("GET", "/console/tables/bac-1/view", "dealer")["dealer_incidents"]
    ].index("missed_scan")
    page.keyboard.press(str(missed + 1))
    expect(page.locator("#confirm-dialog")).to_contain_text("Bỏ sót lá bài khi quét")
    page.keyboard.press("Escape")  # not this time
    expect(page.locator("#confirm-dialog")).to_have_count(0)
    assert studio.summary()["incidents"] == []

    # a reload keeps the language (this browser's choice) and the sign-in (this tab's)
    page.reload()
    expect(page.locator("#console")).to_be_visible()
    expect(page.locator("#next-target")).to_have_text("Nhà con 1")
    expect(page.locator(".topbar .brand")).to_have_text("Màn hình chia bài")
    assert page.evaluate("localStorage.getItem('lt.lang')") == "vi"
    # and back to English at a click
    page.click("#lang-switch [data-lang=en]")
    expect(page.locator("#next-target")).to_have_text("Player 1")
    expect(page.locator(".topbar .brand")).to_have_text("Dealer console")


def test_the_recall_lists_every_bet_of_a_round_with_more_than_500(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio()
    studio.ready_shoe()
    for i in range(4):
        studio.call(
            "POST",
            f"/accounts/acct-{i}/credit",
            "operator",
            {"amount": 10**8, "reference": f"c{i}"},
        )
    bets = [
        {
            "key": f"k{i}",
            "account": f"acct-{i % 4}",
            "type": ("player", "banker")[i % 2],
            "stake": 100,
        }
        for i in range(1203)
    ]
    played = studio.play_round(bets)  # 2S 5H KD TC 3S: a tie, every bet pushes
    assert played["round"]["phase"] == "settled"

    page = studio.page(browser, "/recall/bac-1", width=1400, height=900)
    sign_in(page, studio.tokens["regulator"])
    record = page.locator("article.round-record").first
    record.locator("[data-section=bets] summary").click()
    section = record.locator("[data-section=bets]")
    expect(section.locator("tbody tr")).to_have_count(500)
    expect(section.locator("[data-field=shown]")).to_have_text("Showing 500 of 1203")
    section.locator("[data-action=more]").click()
    expect(section.locator("tbody tr")).to_have_count(1000)
    section.locator("[data-action=all]").click()
    expect(section.locator("tbody tr")).to_have_count(1203)
    expect(section.locator("[data-field=shown]")).to_have_text("Showing 1203 of 1203")
    expect(section.locator("[data-action=more]")).to_have_count(0)
    ids = section.locator("tbody tr td:first-child").all_inner_texts()
    assert len(set(ids)) == 1203  # every bet once

    record.locator("[data-section=settlement] summary").click()
    lines = record.locator("[data-section=settlement]")
    expect(lines.locator("tbody tr")).to_have_count(500)
    lines.locator("[data-action=all]").click()
    expect(lines.locator("tbody tr")).to_have_count(1203)
    assert set(lines.locator("tbody tr td:nth-child(4)").all_inner_texts()) == {"push"}
