"""The studio overlay as a vision mixer keys it, and the dealer console at the same table,
phase by phase, for blackjack and Xì Dách (baccarat: test_browser_overlay_recall):

- the page is transparent to its root (html and body), so it keys over the video;
- during betting it shows the players and the total staked, never a placeholder 0;
- it names the game, the table and the round as the table counts it;
- a round ends with a visible result: a banner, and each hand's outcome;
- a blackjack or Xì Dách table is never asked for baccarat roads;
- it stays legible at 1280x720 (the canvas scales);
- the dealer sees each seat's stakes, the moves as the game names them, special hands
  by their names, and makes the house banker's move with a button.

Screenshots of each phase go to LIVETABLE_SCREENSHOTS (docs/screenshots for the manual).
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.browser.browser_helpers import sign_in, wait_for

TRANSPARENT = "rgba(0, 0, 0, 0)"

# seats 1-3 then the dealer, then seats 1-3 again: seat 1 TS QH (20, stands), seat 2 AH KC
# (blackjack), seat 3 5C 9S (14, hits 8D: bust); the dealer 9D then 8C: 17, stands.
BLACKJACK = ["TS", "AH", "5C", "9D", "QH", "KC", "9S", "8D", "8C"] + ["2C", "3D", "4H"] * 8


def _requests(page: Any) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    return seen


def _roots_are_transparent(page: Any) -> None:
    colours = page.evaluate(
        "[getComputedStyle(document.documentElement).backgroundColor,"
        " getComputedStyle(document.body).backgroundColor]"
    )
    assert colours == [TRANSPARENT, TRANSPARENT], colours


def _shot(studio: Any, page: Any, name: str) -> None:
    """A screenshot of the overlay over a felt-green stand-in for the video (?preview),
    as the mixer would show it keyed; the page itself stays transparent."""
    page.evaluate("document.body.classList.add('preview')")
    studio.shot(page, name)
    page.evaluate("document.body.classList.remove('preview')")


def _fund_and_seat(studio: Any, seats: dict[int, str]) -> None:
    t = studio.table_id
    for seat, account in seats.items():
        body = {"amount": 50_000, "reference": f"fund-{account}"}
        studio.call("POST", f"/accounts/{account}/credit", "operator", body)
        studio.call("POST", f"/tables/{t}/seats", "operator", {"seat": seat, "account": account})


def test_a_blackjack_round_on_the_overlay_and_the_dealer_console(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio(
        BLACKJACK,
        table_id="bj-1",
        game="blackjack",
        game_rules={"decision_seconds": 60, "follow_seconds": 5},
    )
    studio.ready_shoe()
    t = studio.table_id
    _fund_and_seat(studio, {1: "alice", 2: "bob", 3: "carol"})
    overlay = studio.page(browser, f"/overlay/{t}", width=1920, height=1080)
    asked = _requests(overlay)
    expect(overlay.locator("#stream-badge")).to_have_attribute("data-status", "live")
    _roots_are_transparent(overlay)
    dealer = studio.page(browser, "/console/dealer", width=1920, height=1080)
    sign_in(dealer, studio.tokens["dealer"])
    expect(dealer.locator("#console")).to_be_visible()

    # betting: the call to bet, then the players and the total staked as bets come in
    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    expect(overlay.locator("#ov-round")).to_have_text("Round 1")
    expect(overlay.locator("#ov-game")).to_have_text("Blackjack")
    expect(overlay.locator("#ov-table-name")).to_have_text("Table bj-1")
    expect(overlay.locator("[data-field=no-bets]")).to_be_visible()
    bets = [
        {"key": "a", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": "b", "account": "bob", "type": "main", "stake": 500, "seat": 2},
        {"key": "c", "account": "carol", "type": "main", "stake": 2000, "seat": 3},
    ]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets[:2]})
    # while betting is open the dealer sees every seat: what it has staked, or no bet yet
    expect(dealer.locator("[data-seat='1'] [data-field=seat-stake]")).to_have_text("1,000")
    expect(dealer.locator("[data-seat='3'] [data-field=no-bet]")).to_have_text("no bet yet")
    expect(dealer.locator("#round-stakes")).to_have_text("2 bets from 2 players · 1,500 staked")
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets[2:]})
    pair = [{"key": "bp", "account": "bob", "type": "pair", "stake": 200, "seat": 2}]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": pair})
    expect(overlay.locator("[data-field=players] .n")).to_have_text("3")
    expect(overlay.locator("[data-field=staked] .n")).to_have_text("3,700")
    expect(overlay.locator("#ov-countdown")).to_be_visible()
    _shot(studio, overlay, "overlay-blackjack-1-betting")
    expect(dealer.locator("[data-seat='3'] [data-field=seat-stake]")).to_have_text("2,000")
    expect(dealer.locator("[data-field=no-bet]")).to_have_count(0)
    studio.shot(dealer, "dealer-blackjack-1-betting")
    pit = studio.page(browser, "/console/supervisor", width=1920, height=1080)
    sign_in(pit, studio.tokens["sup-bao"])
    expect(pit.locator(f"[data-table={t}] [data-field=in-play]")).to_have_text("3,700")
    studio.shot(pit, "supervisor-blackjack-1-betting")

    # dealing: no placeholder total before a hand has a card; stakes per seat for the dealer
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    assert studio.deal() == "TS"
    seat3 = overlay.locator("[data-hand='seat-3-1']")
    expect(seat3).to_be_visible()
    expect(seat3.locator(".total")).to_have_text("")
    expect(dealer.locator("[data-seat='2'] [data-field=seat-stake]")).to_have_text("700")
    expect(dealer.locator("[data-seat='2'] [data-field=seat-stakes]")).to_have_text(
        "Main bet 500 · Pair 200"
    )
    expect(dealer.locator("#round-stakes")).to_contain_text("3,700")
    _shot(studio, overlay, "overlay-blackjack-2-dealing")
    studio.shot(dealer, "dealer-blackjack-2-dealing")
    for card in BLACKJACK[1:7]:
        assert studio.deal() == card

    # decisions: the moves as the game names them; a blackjack named as such
    expect(dealer.locator("[data-legal='seat:1'] [data-move=stand]")).to_have_text("Stand")
    expect(dealer.locator("[data-seat='2'] .total")).to_have_text("Blackjack")
    expect(overlay.locator("[data-hand='seat-2-1'] .total")).to_have_text("Blackjack")
    expect(overlay.locator("#ov-countdown")).to_be_visible()  # the decision timer
    _shot(studio, overlay, "overlay-blackjack-3-decision")
    studio.shot(dealer, "dealer-blackjack-3-decision")
    for actor, action, account in (("seat:1", "stand", "alice"), ("seat:3", "hit", "carol")):
        body = {"actor": actor, "action": action, "account": account}
        studio.call("POST", f"/tables/{t}/actions", "operator", body)
    assert studio.deal() == "8D"  # seat 3: 22, bust
    assert studio.deal() == "8C"  # the dealer: 17, stands
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")

    # the result: a banner, and each seat's outcome
    banner = overlay.locator("#ov-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Dealer 17")
    expect(banner).to_contain_text("2 won")
    expect(banner).to_contain_text("1 lost")
    outcomes = {
        "seat-1-1": ("win", "Win"),
        "seat-2-1": ("win", "Win"),
        "seat-3-1": ("lose", "Lose"),
    }
    for hand, (result, text) in outcomes.items():
        chip = overlay.locator(f"[data-hand='{hand}'] [data-outcome]")
        expect(chip).to_have_attribute("data-outcome", result)
        expect(chip).to_have_text(text)
    expect(overlay.locator("[data-hand='seat-3-1'] .total")).to_have_text("22 bust")
    _shot(studio, overlay, "overlay-blackjack-4-result")
    studio.shot(dealer, "dealer-blackjack-4-result")
    assert not [u for u in asked if "/roads" in u], "a blackjack table was asked for roads"

    # legible at 1280x720: the same canvas scaled to the source
    small = studio.page(browser, f"/overlay/{t}?lang=vi", width=1280, height=720)
    expect(small.locator("#ov-banner")).to_contain_text("Người chia bài 17")
    box = small.locator("#ov-banner").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    assert box["height"] >= 40  # still a headline, two thirds of its 1080 size
    seat = small.locator("[data-hand='seat-1-1']").bounding_box()
    assert seat is not None and seat["y"] + seat["height"] <= 720
    _shot(studio, small, "overlay-blackjack-720p-vi")


# forced-draw deals counter-clockwise: seat 2 AS, seat 1 9D, the banker TC (face down),
# then seat 2 AH (Xì Bàng), seat 1 8S (17), the banker 7D (17).
XIDACH = ["AS", "9D", "TC", "AH", "8S", "7D", "2C", "3D", "4H", "5S", "6C", "KD", "KC"]


def test_a_xidach_round_on_the_overlay_with_the_dealer_making_the_house_move(
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
    _fund_and_seat(studio, {1: "alice", 2: "bob"})
    overlay = studio.page(browser, f"/overlay/{t}?lang=vi", width=1920, height=1080)
    asked = _requests(overlay)
    expect(overlay.locator("#stream-badge")).to_have_attribute("data-status", "live")
    _roots_are_transparent(overlay)
    dealer = studio.page(browser, "/console/dealer", width=1920, height=1080)
    sign_in(dealer, studio.tokens["dealer"])
    expect(dealer.locator("#console")).to_be_visible()
    pit = studio.page(browser, "/console/supervisor", width=1920, height=1080)
    sign_in(pit, studio.tokens["sup-bao"])
    tile = pit.locator(f"[data-table={t}]")

    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    expect(overlay.locator("#ov-game")).to_have_text("Xì Dách")
    expect(overlay.locator("#ov-round")).to_have_text("Ván 1")
    bets = [
        {"key": "a", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": "b", "account": "bob", "type": "main", "stake": 1500, "seat": 2},
    ]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets[:1]})
    expect(overlay.locator("[data-field=staked] .n")).to_have_text("1.000")  # vi grouping
    _shot(studio, overlay, "overlay-xidach-1-betting")
    expect(dealer.locator("#phase")).to_have_attribute("data-phase", "betting")
    expect(dealer.locator("[data-seat='1'] [data-field=seat-stake]")).to_have_text("1,000")
    expect(dealer.locator("[data-seat='2'] [data-field=no-bet]")).to_be_visible()
    expect(dealer.locator("#round-stakes")).to_have_text("1 bet from 1 player · 1,000 staked")
    studio.shot(dealer, "dealer-xidach-1-betting")
    expect(tile.locator("[data-field=in-play]")).to_have_text("1,000")
    expect(tile.locator("[data-field=bank]")).to_contain_text("the house")
    studio.shot(pit, "supervisor-xidach-1-betting")
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets[1:]})
    # forced-draw waits for its countdown (only room closes once all have bet): the dealer
    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    for card in XIDACH[:6]:
        assert studio.deal() == card

    # the banker's hole card stays face down; Xì Bàng is named, not "12"
    banker = overlay.locator("[data-hand=banker]")
    expect(banker.locator("[data-card=hidden]")).to_have_count(1)
    assert "TC" not in overlay.content()
    expect(overlay.locator("[data-hand='seat-2-1'] .total")).to_have_text("Xì Bàng")
    expect(dealer.locator("[data-hand='seat-2-1'] .total")).to_have_text("Xì Bàng")
    expect(dealer.locator("[data-seat='1'] [data-field=seat-stake]")).to_have_text("1,000")
    _shot(studio, overlay, "overlay-xidach-2-decision")
    studio.shot(dealer, "dealer-xidach-2-decision")
    body = {"actor": "seat:1", "action": "stand", "account": "alice"}
    studio.call("POST", f"/tables/{t}/actions", "operator", body)

    # the house banker's move is the dealer's: one button per move the policy allows
    moves = dealer.locator("[data-legal=banker] button")
    expect(moves.first).to_be_visible()
    studio.shot(dealer, "dealer-xidach-3-house-move")
    labels = moves.all_inner_texts()
    assert labels and all(label[:1].isupper() for label in labels), labels
    dealer.keyboard.press("1")  # the first legal move, by its key
    wait_for(
        lambda: studio.summary()["round"]["phase"] in ("settled", "dealing"), what="banker moved"
    )
    for _ in range(6):  # a draw the banker's policy took, if any
        if studio.summary()["round"]["phase"] == "settled":
            break
        rnd = studio.summary()["round"]
        if (rnd.get("next") or {}).get("kind") == "card":
            studio.deal()
        elif dealer.locator("[data-legal=banker] button").count():
            dealer.keyboard.press("1")
        wait_for(lambda: studio.summary()["last_seq"] > 0)
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")

    # the result: the banker's hand revealed, a banner, each punter's outcome
    expect(banker.locator("[data-card='TC']")).to_have_count(1)
    expect(overlay.locator("#ov-banner")).to_be_visible()
    expect(overlay.locator("#ov-banner")).to_contain_text("Nhà cái")
    for hand in ("seat-1-1", "seat-2-1"):
        expect(overlay.locator(f"[data-hand='{hand}'] [data-outcome]")).to_be_visible()
    expect(overlay.locator("[data-hand='seat-2-1'] [data-outcome]")).to_have_text("Thắng")
    _shot(studio, overlay, "overlay-xidach-4-result")
    studio.shot(dealer, "dealer-xidach-4-result")
    assert not [u for u in asked if "/roads" in u], "a Xì Dách table was asked for roads"
    # legible at 1280x720 too: the banner and every hand inside the picture
    small = studio.page(browser, f"/overlay/{t}?lang=vi", width=1280, height=720)
    expect(small.locator("#ov-banner")).to_contain_text("Nhà cái")
    for hand in ("banker", "seat-1-1", "seat-2-1"):
        box = small.locator(f"[data-hand='{hand}']").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, box
        assert box["y"] + box["height"] <= 720, (hand, box)
    _shot(studio, small, "overlay-xidach-720p-vi")
    expect(tile.locator("[data-field=in-play]")).to_have_text("0")
    expect(tile.locator("[data-hand=banker] [data-card='TC']")).to_have_count(1)
    studio.shot(pit, "supervisor-xidach-4-result")

    # the recall: every step in words, the house banker's move the dealer's, the bets one
    # by one, what the settlement returned, the rules as the actor of what they did
    recall = studio.page(browser, f"/recall/{t}", width=1920, height=1080)
    sign_in(recall, studio.tokens["regulator"])
    steps = recall.locator("article.round-record [data-section=steps] tbody tr")
    placed = steps.filter(has_text="Bets placed")
    expect(placed.first).to_contain_text("Seat 1 · Main bet 1,000 · alice")
    expect(placed.last).to_contain_text("Seat 2 · Main bet 1,500 · bob")
    settled = steps.filter(has_text="Bets settled").first  # then "Round settled"
    expect(settled).to_contain_text("2 bets settled")
    expect(settled.locator("td").last).to_have_text("Table rules")
    rows = [row.split("\t") for row in steps.all_inner_texts()]
    for row in rows:
        assert "undefined" not in row and "null" not in row and "{" not in "".join(row), row
    house = [r for r in rows if r[2] == "Decision" and r[3].startswith("Banker")]
    assert house and all(r[4] == "Dealer dealer-ann" for r in house), house
    assert all(r[3].count("xét bài") <= 1 for r in house), house  # the move named once
    dealt = [r for r in rows if r[2] == "Card dealt" and "Banker" in r[3]]
    assert dealt and not any("(BANKER)" in r[3] for r in dealt), dealt
    studio.shot(recall, "recall-xidach-round")


def test_the_house_move_route_is_the_dealers_at_a_house_banked_table_only(
    make_studio: Any,
) -> None:
    """Who may make the house banker's move: the table's dealer or a supervisor, at a
    house-banked Xì Dách table; never an operator, a regulator, no token, nor a dealer
    of another table; and a baccarat table has no house banker."""
    studio = make_studio(XIDACH, table_id="xd-1", game="xidach", profile="forced-draw")
    http = studio.http
    path = "/api/v1/tables/xd-1/house-move"
    assert http.post(path, json={"action": "stand"}).status_code == 401
    for role in ("operator", "regulator"):
        headers = {"Authorization": f"Bearer {studio.tokens[role]}"}
        assert http.post(path, json={"action": "stand"}, headers=headers).status_code == 403
    headers = {"Authorization": f"Bearer {studio.tokens['dealer']}"}
    other = http.post("/api/v1/tables/bac-9/house-move", json={"action": "stand"}, headers=headers)
    assert other.status_code == 403  # the dealer is bound to xd-1
    refused = http.post(path, json={"action": "stand"}, headers=headers)
    assert refused.status_code == 409, refused.text  # no round: nothing awaited of the banker
    bad = http.post(path, json={"action": "Stand!"}, headers=headers)
    assert bad.status_code == 422


def test_a_baccarat_round_phase_by_phase_on_the_overlay_dealer_and_pit(
    make_studio: Any, browser: Any
) -> None:
    studio = make_studio()
    studio.ready_shoe()
    t = studio.table_id
    for _ in range(3):  # a few results on the roads first
        studio.play_round()
    for account in ("acct-1", "acct-2"):
        body = {"amount": 50_000, "reference": f"fund-{account}"}
        studio.call("POST", f"/accounts/{account}/credit", "operator", body)
    overlay = studio.page(browser, f"/overlay/{t}", width=1920, height=1080)
    asked = _requests(overlay)
    expect(overlay.locator("#stream-badge")).to_have_attribute("data-status", "live")
    _roots_are_transparent(overlay)
    expect(overlay.locator("#ov-roads")).to_have_attribute("data-rounds", "3")
    dealer = studio.page(browser, "/console/dealer", width=1920, height=1080)
    sign_in(dealer, studio.tokens["dealer"])
    pit = studio.page(browser, "/console/supervisor", width=1920, height=1080)
    sign_in(pit, studio.tokens["sup-bao"])

    studio.call("POST", f"/tables/{t}/betting/open", "dealer")
    bets = [
        {"key": "p1", "account": "acct-1", "type": "player", "stake": 2000},
        {"key": "p2", "account": "acct-1", "type": "player_pair", "stake": 200},
        {"key": "b1", "account": "acct-2", "type": "banker", "stake": 5000},
    ]
    studio.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets})
    expect(overlay.locator("#ov-round")).to_have_text("Round 4")  # the table's count
    expect(overlay.locator("[data-field=players] .n")).to_have_text("2")
    expect(overlay.locator("[data-field=staked] .n")).to_have_text("7,200")
    _shot(studio, overlay, "overlay-baccarat-1-betting")
    studio.shot(dealer, "dealer-baccarat-1-betting")
    expect(pit.locator(f"[data-table={t}] [data-field=in-play]")).to_have_text("7,200")
    tile_text = pit.locator(f"[data-table={t}]").inner_text()
    assert "null" not in tile_text and "undefined" not in tile_text, tile_text
    studio.shot(pit, "supervisor-baccarat-1-betting")

    studio.call("POST", f"/tables/{t}/betting/close", "dealer")
    studio.deal()
    studio.deal()
    expect(overlay.locator("[data-position=B1] [data-card]")).to_have_count(1)
    _shot(studio, overlay, "overlay-baccarat-2-dealing")
    studio.shot(dealer, "dealer-baccarat-2-dealing")
    expect(pit.locator(f"[data-table={t}] [data-field=hands] [data-card]")).to_have_count(2)
    studio.shot(pit, "supervisor-baccarat-2-dealing")
    while (studio.summary()["round"] or {}).get("next_position"):
        studio.deal()
    wait_for(lambda: studio.summary()["round"]["phase"] == "settled", what="settled")
    expect(overlay.locator("#ov-banner")).to_be_visible()
    expect(overlay.locator("#ov-roads")).to_have_attribute("data-rounds", "4")
    _shot(studio, overlay, "overlay-baccarat-3-result")
    studio.shot(dealer, "dealer-baccarat-3-result")
    expect(pit.locator(f"[data-table={t}] [data-field=in-play]")).to_have_text("0")
    studio.shot(pit, "supervisor-baccarat-3-result")
    assert [u for u in asked if "/roads" in u], "the baccarat overlay shows its roads"
