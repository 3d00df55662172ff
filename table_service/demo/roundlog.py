"""The live round log: the table's own event stream, rendered for a person watching.

Everything printed about the table comes from the stream (what the table recorded), so
the log cannot claim something that did not happen. The bots add their own narration
(``note``), marked as such, to say what they did and why (a deliberate mistake, a
procedure applied). The console is the caller's: the CLI passes the terminal's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from table_service.rules.baccarat import next_position
from table_service.rules.cards import parse_card
from table_service.table import events as ev
from table_service.table.events import REGISTRY
from table_service.terminal import rule_width

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
LABEL_STYLES = {
    "round": "bold white",
    "betting": "cyan",
    "bets": "cyan",
    "card": "white",
    "burn": "dim",
    "shoe": "magenta",
    "cut": "bold magenta",
    "result": "bold green",
    "settled": "green",
    "payouts": "green",
    "void": "bold red",
    "incident": "bold yellow",
    "resolved": "yellow",
    "aside": "yellow",
    "rearrange": "yellow",
    "reader": "blue",
    "table": "blue",
    "dealer": "italic dim",
    "supervisor": "italic dim",
    "players": "italic dim",
    "demo": "bold blue",
    "hand": "white",
    "seat": "magenta",
    "turn": "cyan",
    "decision": "bold cyan",
}


def card_text(code: str | None) -> Text:
    if not code:
        return Text("??", style="dim")
    rank, suit = code[0], code[1]
    style = "bold red" if suit in "HD" else "bold"
    return Text(("10" if rank == "T" else rank) + SUIT_SYMBOLS.get(suit, suit), style=style)


def is_card_code(value: object) -> bool:
    """``"TS"``, ``"AH"``: a card code as the table writes it in event payloads."""
    if not isinstance(value, str) or len(value) != 2:
        return False
    try:
        parse_card(value)
    except ValueError:
        return False
    return True


def detail_text(key: str, value: object) -> Text:
    """``key=value`` with card codes shown as card lines show them (``card=10♠``)."""
    if key == "expected":
        return Text(f"expected {expected_text(value)}")
    if isinstance(value, dict):
        return Text(f"{key}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
    text = Text(f"{key}=")
    cards = value if isinstance(value, list) else [value]
    if "card" in key and cards and all(is_card_code(c) for c in cards):
        for i, code in enumerate(cards):
            if i:
                text.append(" ")
            text.append(card_text(str(code)))
    else:
        text.append(str(value))
    return text


def positions(cards: list[str]) -> list[str]:
    """Positions of a round's cards in shoe order (P1, B1, P2, B2, then P3 / B3)."""
    parsed = [parse_card(c) for c in cards]
    labels = []
    for i in range(len(parsed)):
        position = next_position(parsed[:i])
        labels.append(position.value if position else "extra")
    return labels


def _bet_label(result: dict[str, Any]) -> str:
    """``main``, ``main split``, ``behind double`` (seat games add the seat): the part is
    named only where it says something (not ``pair pair`` nor ``main original``)."""
    label = str(result["type"])
    part = result.get("part")
    if part and part not in ("original", result["type"]):
        label += f" {part}"
    if result.get("seat") is not None:
        label = f"seat {result['seat']} {label}"
    return label


def _hand_text(hand: dict[str, Any]) -> Text:
    text = Text()
    for code in hand.get("cards", []):
        text.append(card_text(code))
        text.append(" ")
    if hand.get("blackjack"):
        text.append("BLACKJACK", style="bold green")
    elif hand.get("bust"):
        text.append(f"{hand.get('total')} BUST", style="bold red")
    else:
        text.append(f"= {hand.get('total')}")
    return text


def _actor_text(actor: str) -> str:
    kind, _, who = actor.partition(":")
    if kind == "seat":
        return f"seat {who}"
    if kind == "behind":
        return "bet-behind player"
    return actor


XD_CLASSES = {
    "xi_bang": "XÌ BÀNG",
    "xi_dach": "XÌ DÁCH",
    "ngu_linh": "NGŨ LINH",
    "quac": "QUẮC (bust)",
    "non": "non (under 16)",
    "du_tuoi": "",
}


def xd_hand_text(hand: dict[str, Any]) -> Text:
    """A Xì Dách hand: its cards, then its special name or its total."""
    text = Text()
    for code in hand.get("cards", []):
        text.append(card_text(code))
        text.append(" ")
    kind = str(hand.get("classification") or "")
    name = XD_CLASSES.get(kind, kind)
    total = hand.get("total")
    if kind in ("xi_bang", "xi_dach", "ngu_linh"):
        text.append(name, style="bold green")
    elif kind == "quac":
        text.append(f"{total} {name}", style="bold red")
    elif total is not None:
        text.append(f"= {total}" + (f" {name}" if name else ""))
    return text


def expected_text(expected: object) -> str:
    """What the table was waiting for when a card came it was not owed, in words."""
    if not isinstance(expected, dict):
        return str(expected)
    kind = expected.get("kind")
    if kind == "decision":
        actors = ", ".join(_actor_text(str(a)) for a in expected.get("actors", []))
        return f"a decision from {actors}" if actors else "a decision"
    if kind == "card" and expected.get("code"):
        return f"a card for {expected['code']}"
    if kind == "supervisor":
        return "the supervisor"
    if kind in ("complete", "done"):
        return "no card (the round was complete)"
    return str(kind or expected)


def money(amount: int) -> str:
    return f"{amount:,}"


def plural(count: int, word: str) -> str:
    """``1 bet``, ``3 bets``, ``1 punter``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


XD_RESULTS = {"win": "WINS", "lose": "loses", "push": "push (hòa)"}


def _short_round(round_id: str | None) -> str:
    if not round_id:
        return ""
    shoe_game = round_id.rsplit("-s", 1)[-1]  # bac-1-s2-g7 -> 2-g7
    return "s" + shoe_game.replace("-g", "·g")


@dataclass
class RoundStats:
    bets: int = 0
    staked: int = 0
    accounts: set[str] = field(default_factory=set)
    refunded: int = 0
    refunds: int = 0
    bank_returned: int = 0
    """A seated Xì Dách bank given back by a void (its balance, not a punter's stake)."""
    results: list[dict[str, Any]] = field(default_factory=list)
    bank: dict[str, Any] | None = None
    """A seated Xì Dách bank (its balance committed): not a bet of a punter."""


@dataclass
class LogTotals:
    rounds_settled: int = 0
    rounds_voided: int = 0
    staked: int = 0
    returned: int = 0
    incidents: dict[str, str] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    lines: int = 0
    bank_net: int = 0
    """What seated banks won (+) or lost (−) over the settled rounds."""
    commission: int = 0


class RoundLog:
    def __init__(self, console: Console, *, rounds_before: int = 0) -> None:
        """``rounds_before``: rounds the table played before this log began, so each
        round is numbered as the table counts it (a Xì Dách round is always game 1 of
        its one-deck shoe)."""
        self.console = console
        self.totals = LogTotals()
        self.table_rounds = rounds_before
        self._rounds: dict[str, RoundStats] = {}
        self._burn_left: int | None = None
        self._burnt = 0
        self._round_active = False
        self._current_round: str | None = None
        self._game = "baccarat"

    # -- output ------------------------------------------------------------------------------
    def _line(self, ts: str | None, round_id: str | None, label: str, body: Text | str) -> None:
        clock = (ts or datetime.now(UTC).isoformat())[11:19]
        line = Text(clock + " ", style="dim")
        line.append(f"{_short_round(round_id):<8}", style="cyan")
        line.append(f"{label:<11}", style=LABEL_STYLES.get(label, "white"))
        line.append(body if isinstance(body, Text) else Text(body))
        self.console.print(line, highlight=False, soft_wrap=True)
        self.totals.lines += 1

    def note(self, who: str, message: str, round_id: str | None = None) -> None:
        """A bot's own words: what it did and why (not a table event)."""
        self._line(None, round_id, who, Text(f"▸ {message}", style="italic"))

    def banner(self, message: str) -> None:
        self._line(None, None, "demo", Text(message, style="bold"))

    def rule(self, title: str) -> None:
        """A horizontal rule no wider than a terminal line, even when redirected."""
        rule = Rule(Text(title, style="bold"), style="dim")
        self.console.print(rule, width=rule_width(self.console))

    # -- events ------------------------------------------------------------------------------
    def on_event(self, event: dict[str, Any]) -> None:
        """One event of the staff stream, told by its class (a type it does not tell, or
        one the registry does not know, is left out)."""
        cls = REGISTRY.get(event["type"])
        handler = _TELLS.get(cls) if cls is not None else None
        if handler is not None:
            handler(self, event, event["payload"])

    def _stats(self, round_id: str) -> RoundStats:
        return self._rounds.setdefault(round_id, RoundStats())

    def _on_table_opened(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        cfg = p["config"]
        self._game = cfg.get("game", "baccarat")
        self._line(
            e["ts"],
            None,
            "table",
            f"table {e['table_id']} opened: {plural(cfg['decks'], 'deck')}, "
            f"betting {cfg['betting_ms'] / 1000:g} s, stakes {money(cfg['limits']['min_stake'])}"
            f"..{money(cfg['limits']['max_stake'])}",
        )

    def _on_dealer_signed_in(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._line(e["ts"], None, "table", f"dealer on duty: {p.get('dealer')}")

    def _on_reader_status(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        state = "online" if p["online"] else "OFFLINE"
        detail = f" ({p['detail']})" if p.get("detail") else ""
        self._line(e["ts"], None, "reader", f"shoe reader {state}{detail}")

    def _on_shoe_inserted(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._burn_left, self._burnt = None, 0
        burn = (
            "burn: the first card shown is the indicator"
            if p.get("burn", True)
            else "no burn: the first card out is dealt"
        )
        self._line(
            e["ts"],
            None,
            "shoe",
            f"shoe {p['shoe_no']} inserted ({plural(p['decks'], 'deck')}); {burn}",
        )

    def _on_card_burnt(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._burnt += 1
        if p.get("indicator"):
            self._burn_left = int(p["burn_count"])
            body = Text("indicator ")
            body.append(card_text(p["card"]))
            body.append(f" → {self._burn_left} more card(s) burnt face down")
            self._line(e["ts"], None, "burn", body)
        elif self._burn_left is not None:
            self._burn_left -= 1
        if self._burn_left == 0:
            self._line(e["ts"], None, "burn", f"burn complete ({self._burnt} cards); shoe ready")
            self._burn_left = None

    def _on_betting_opened(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._round_active = True
        self._current_round = p["round_id"]
        self.table_rounds += 1
        game = "" if self._game == "xidach" else f" · game {p['game_number']} of the shoe"
        self.rule(f" round {self.table_rounds} · {p['round_id']}{game} ")
        self._line(e["ts"], p["round_id"], "betting", f"open until {p['closes_at'][11:19]} UTC")

    def _on_bets_placed(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        stats = self._stats(p["round_id"])
        for bet in p["bets"]:
            if bet.get("type") == "bank":
                stats.bank = dict(bet)
                continue
            stats.bets += 1
            stats.staked += bet["stake"]
            stats.accounts.add(bet["account"])

    def _on_betting_closed(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        stats = self._stats(p["round_id"])
        who = "punter" if self._game == "xidach" else "player"
        players = len(stats.accounts)
        body = (
            f"betting closed ({p.get('reason', '')}): {plural(stats.bets, 'bet')} from "
            f"{plural(players, who)}, {money(stats.staked)} staked"
        )
        if stats.bank is not None:
            body += (
                f"; the bank: {stats.bank['account']} at seat {stats.bank.get('seat')} "
                f"commits {money(stats.bank['stake'])}"
            )
        self._line(e["ts"], p["round_id"], "bets", body)

    def _on_card_dealt(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        body = Text(f"{p['position'] or '—':<3} ")
        body.append(card_text(p["card"]))
        if p.get("source") == "carried":
            body.append("  (set aside last round: the first card of this one)", style="yellow")
        self._line(e["ts"], p["round_id"], "card", body)

    def _on_card_set_aside(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        reason = p.get("reason")
        body = card_text(p["card"])
        texts = {
            "exposed_during_betting": " exposed while betting was open: set aside (burnt)",
            "unneeded": " not needed by the rules: set aside as the next round's first card",
            "after_cut_card": " drawn after the cut card: set aside",
            "foreign_card": " is foreign to this shoe: set aside",
            "no_shoe": " read with no shoe in use: set aside",
            "burn_mode": " burnt from the shoe's burn mode",
            "not_owed": " pulled when no card was owed (a decision was awaited): set aside",
        }
        body.append(texts.get(str(reason), f" set aside ({reason})"))
        self._line(e["ts"], e.get("round_id") or p.get("round_id"), "aside", body)

    def _on_cards_rearranged(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        body = Text("in shoe order: ")
        labels = list(p.get("positions") or [])
        if not labels and self._game == "baccarat":
            labels = positions(p["cards"])
        labels += [""] * (len(p["cards"]) - len(labels))
        for label, code in zip(labels, p["cards"], strict=True):
            body.append(f"{label} " if label else "")
            body.append(card_text(code))
            body.append("  ")
        if p.get("entered"):
            body.append("(entered by hand: ")
            for code in p["entered"]:
                body.append(card_text(code))
            body.append(")")
        self._line(e["ts"], p["round_id"], "rearrange", body)

    def _on_cut_card_drawn(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        when = "this round completes, then" if self._round_active else "now:"
        self._line(
            e["ts"],
            e.get("round_id") or (self._current_round if self._round_active else None),
            "cut",
            f"CUT CARD drawn from shoe {p['shoe_no']}: {when} the shoe ends",
        )

    def _on_round_result(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        o = p["outcome"]
        if "dealer" in o:
            self._seat_game_result(e, p["round_id"], o)
            return
        if "hands" in o:
            self._xidach_result(e, p["round_id"], o)
            return
        player, banker = o["player"], o["banker"]
        winner = o["winner"]
        headline = {
            "player": f"PLAYER wins {player['total']}–{banker['total']}",
            "banker": f"BANKER wins {banker['total']}–{player['total']}",
            "tie": f"TIE {player['total']}–{banker['total']}",
        }.get(winner, winner)
        body = Text(headline, style="bold")
        body.append("   P ")
        for code in player["cards"]:
            body.append(card_text(code))
            body.append(" ")
        body.append(" B ")
        for code in banker["cards"]:
            body.append(card_text(code))
            body.append(" ")
        flags = [
            name
            for name, on in (
                ("natural", o.get("natural")),
                ("player pair", o.get("player_pair")),
                ("banker pair", o.get("banker_pair")),
            )
            if on
        ]
        if flags:
            body.append(" (" + ", ".join(flags) + ")", style="cyan")
        self.totals.outcomes[winner] += 1
        self._line(e["ts"], p["round_id"], "result", body)

    def _on_bets_settled(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._stats(p["round_id"]).results.extend(p["results"])

    # -- seat games (blackjack) ------------------------------------------------------------
    def _seat_game_result(self, e: dict[str, Any], round_id: str, o: dict[str, Any]) -> None:
        """The dealer's hand, then each seat's hands: what a pit boss checks."""
        dealer = o.get("dealer")
        if dealer is None:
            self._line(e["ts"], round_id, "result", "no seat bet: nothing dealt")
            return
        body = Text("DEALER ", style="bold")
        body.append(_hand_text(dealer))
        self.totals.outcomes["dealer bust" if dealer.get("bust") else "dealer stands"] += 1
        self._line(e["ts"], round_id, "result", body)
        for seat in o.get("seats", []):
            for hand in seat["hands"]:
                line = Text(f"seat {seat['seat']} hand {hand['hand']}  ")
                line.append(_hand_text(hand))
                flags = [
                    name
                    for name, on in (
                        ("doubled", hand.get("doubled")),
                        ("surrendered", hand.get("surrendered")),
                        ("auto-played", hand.get("auto")),
                        ("insured", seat.get("insured") and hand["hand"] == 1),
                    )
                    if on
                ]
                if flags:
                    line.append(" (" + ", ".join(flags) + ")", style="cyan")
                self._line(e["ts"], round_id, "hand", line)

    def _xidach_result(self, e: dict[str, Any], round_id: str, o: dict[str, Any]) -> None:
        """The banker's hand, then each punter's, with how it was settled."""
        banker = o.get("banker") or {}
        if banker.get("cards"):
            seat = banker.get("seat")
            who = "house" if seat in (None, "house") else f"seat {seat}"
            body = Text(f"BANKER ({who}) ", style="bold")
            body.append(xd_hand_text(banker))
            self._line(e["ts"], round_id, "result", body)
        elif o.get("room_closed"):
            self._line(e["ts"], round_id, "result", "room closed: every stake goes back")
        for hand in o.get("hands", []):
            line = Text(f"seat {hand['seat']} hand {hand.get('hand', 1)}  ")
            line.append(xd_hand_text(hand))
            result = hand.get("result")
            if result:
                style = {"win": "bold green", "lose": "red"}.get(str(result), "yellow")
                line.append(f"  {XD_RESULTS.get(str(result), str(result))}", style=style)
                if hand.get("settled_by"):
                    line.append(f" ({str(hand['settled_by']).replace('_', ' ')})", style="dim")
            self._line(e["ts"], round_id, "hand", line)
        kind = str(banker.get("classification") or "")
        self.totals.outcomes[f"banker {XD_CLASSES.get(kind) or kind or 'none'}".strip()] += 1

    def _on_commission_credited(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self.totals.commission += int(p.get("amount") or 0)
        self._line(
            e["ts"], p.get("round_id"), "settled", f"commission to the house {money(p['amount'])}"
        )

    def _on_room_closed(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        needs = p.get("needs")
        detail = f" (the bank needs {money(int(needs))})" if needs else ""
        self._line(e["ts"], None, "table", f"room closed: {p.get('reason', '')}{detail}")

    def _on_room_reopened(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._line(e["ts"], None, "table", "room reopened: a seated player can take the bank")

    def _on_cards_revealed(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        body = Text("face-down cards turned up: ")
        for item in p.get("cards") or []:
            code = item.get("card") if isinstance(item, dict) else item
            if isinstance(code, str):
                body.append(card_text(code))
                body.append(" ")
        self._line(e["ts"], p.get("round_id") or e.get("round_id"), "card", body)

    def _on_seat_taken(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        when = " (plays from the next round)" if p.get("pending") else ""
        self._line(e["ts"], None, "seat", f"{p['account']} takes seat {p['seat']}{when}")

    def _on_seat_released(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._line(e["ts"], e.get("round_id"), "seat", f"seat {p['seat']} released ({p['reason']})")

    def _on_player_disconnected(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._line(
            e["ts"],
            e.get("round_id"),
            "seat",
            f"seat {p['seat']}: player disconnected; the rules play the rest of the round",
        )

    def _on_decision_awaited(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        actors = ", ".join(_actor_text(a) for a in p["actors"])
        self._line(
            e["ts"],
            p["round_id"],
            "turn",
            f"{actors} to decide within {p['ms'] / 1000:g} s (until {p['deadline'][11:19]})",
        )

    def _on_action_taken(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        who = _actor_text(p["actor"])
        hand = f" hand {p['hand']}" if p.get("hand") else ""
        action = str(p["action"]).replace("_", " ")
        body = Text(f"{who}{hand}: ")
        body.append(action.upper(), style="bold")
        if p.get("target"):
            target = str(p["target"])
            body.append(" " + (f"seat {target}" if target.isdigit() else target))
        if p.get("auto") == "timeout":
            body.append("  (timer ran out: the rules play it)", style="yellow")
        elif p.get("auto") == "disconnected":
            body.append("  (player disconnected: the rules play it)", style="yellow")
        self._line(e["ts"], p["round_id"], "decision", body)

    def _payouts(self, round_id: str) -> Text | None:
        """Which bets won or pushed: ``won: demo-player-1 banker 500 → 975, …``."""
        results = self._stats(round_id).results
        if not results:
            return None
        results = [r for r in results if r.get("type") != "bank"]
        if not results:
            return None
        body = Text()
        for result, label in (
            ("win", "won"),
            ("push", "push"),
            ("half_refund", "surrendered, half back"),
        ):
            paid = [r for r in results if r["result"] == result]
            if not paid:
                continue
            if body:
                body.append(" · ")
            body.append(f"{label}: ", style="bold")
            body.append(
                ", ".join(
                    f"{r['account']} {_bet_label(r)} {money(r['stake'])} → {money(r['returned'])}"
                    for r in paid
                )
            )
        others = [r for r in results if r["result"] not in ("win", "push", "half_refund")]
        if others and any(r.get("seat") is not None for r in others):
            # a seat game: the pit boss reads every bet's fate, lost ones too
            if body:
                body.append(" · ")
            body.append("lost: ", style="bold")
            body.append(
                ", ".join(f"{r['account']} {_bet_label(r)} {money(r['stake'])}" for r in others)
            )
            return body
        if others:
            if body:
                body.append(" · ")
            body.append(f"{len(others)} lost", style="dim")
        return body

    def _on_round_settled(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._round_active = False
        staked, returned, bets = p["staked"], p["returned"], p["bets"]
        banks = [r for r in self._stats(p["round_id"]).results if r.get("type") == "bank"]
        for bank in banks:  # a seated bank is the banker's balance, not a punter's bet
            staked -= bank["stake"]
            returned -= bank["returned"]
            bets -= 1
        self.totals.rounds_settled += 1
        self.totals.staked += staked
        self.totals.returned += returned
        if banks:
            net = sum(b["returned"] - b["stake"] for b in banks)
            self.totals.bank_net += net
            holder = banks[0]
            text = (
                f"{plural(bets, 'bet')} settled: staked {money(staked)}, returned "
                f"{money(returned)}; the bank ({holder['account']}, seat {holder.get('seat')}) "
                f"{money(holder['stake'])} → {money(holder['returned'])} "
                f"({'+' if net >= 0 else '−'}{money(abs(net))})"
            )
        else:
            text = (
                f"{plural(bets, 'bet')} settled: staked {money(staked)}, returned "
                f"{money(returned)} "
                f"(house {'+' if staked >= returned else '−'}{money(abs(staked - returned))})"
            )
        self._line(e["ts"], p["round_id"], "settled", text)
        payouts = self._payouts(p["round_id"])
        if payouts is not None:
            self._line(e["ts"], p["round_id"], "payouts", payouts)

    def _on_bets_refunded(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        stats = self._stats(p["round_id"])
        stakes = [r for r in p["refunds"] if r.get("type") != "bank"]
        stats.refunds += len(stakes)
        stats.refunded += sum(r["returned"] for r in stakes)
        stats.bank_returned += sum(r["returned"] for r in p["refunds"] if r.get("type") == "bank")

    def _on_round_voided(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._round_active = False
        stats = self._stats(p["round_id"])
        self.totals.rounds_voided += 1
        bank = stats.bank_returned
        self._line(
            e["ts"],
            p["round_id"],
            "void",
            f"ROUND VOID ({p['reason']}): {plural(stats.refunds, 'stake')} refunded, "
            f"{money(stats.refunded)} in total"
            + (f"; the bank's {money(bank)} back to its holder" if bank else ""),
        )

    def _on_incident_raised(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self.totals.incidents[p["incident_id"]] = p["kind"]
        details = dict(p.get("details", {}))
        procedure = details.pop("procedure", None)
        body = Text(f"⚠ {p['incident_id']} {p['kind']}", style="bold yellow")
        body.append(" [blocking: table paused]" if p["blocking"] else "", style="red")
        body.append(f" raised by {p.get('raised_by') or e['actor']}")
        for i, (key, value) in enumerate(details.items()):
            body.append(", " if i else " ", style="dim")
            body.append(detail_text(key, value))
        if procedure:
            body.append(f" — {procedure}")
        self._line(e["ts"], p.get("round_id"), "incident", body)

    def _on_incident_resolved(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        by = p.get("resolved_by") or e["actor"]
        self.totals.resolved[p["incident_id"]] = by
        self._line(
            e["ts"],
            e.get("round_id"),
            "resolved",
            f"✔ {p['incident_id']} by {by}: {p['resolution']}",
        )

    def _on_shoe_ended(self, e: dict[str, Any], p: dict[str, Any]) -> None:
        self._line(e["ts"], None, "shoe", f"shoe {p['shoe_no']} ended: {p['reason']}")


Handler = Callable[[RoundLog, dict[str, Any], dict[str, Any]], None]
# How the log tells each event, by its class.
_TELLS: Final[dict[type[ev.TableEvent], Handler]] = {
    ev.TableOpened: RoundLog._on_table_opened,
    ev.DealerSignedIn: RoundLog._on_dealer_signed_in,
    ev.ReaderStatus: RoundLog._on_reader_status,
    ev.ShoeInserted: RoundLog._on_shoe_inserted,
    ev.CardBurnt: RoundLog._on_card_burnt,
    ev.BettingOpened: RoundLog._on_betting_opened,
    ev.BetsPlaced: RoundLog._on_bets_placed,
    ev.BettingClosed: RoundLog._on_betting_closed,
    ev.CardDealt: RoundLog._on_card_dealt,
    ev.CardSetAside: RoundLog._on_card_set_aside,
    ev.CardsRearranged: RoundLog._on_cards_rearranged,
    ev.CutCardDrawn: RoundLog._on_cut_card_drawn,
    ev.RoundResult: RoundLog._on_round_result,
    ev.BetsSettled: RoundLog._on_bets_settled,
    ev.CommissionCredited: RoundLog._on_commission_credited,
    ev.RoomClosed: RoundLog._on_room_closed,
    ev.RoomReopened: RoundLog._on_room_reopened,
    ev.CardsRevealed: RoundLog._on_cards_revealed,
    ev.SeatTaken: RoundLog._on_seat_taken,
    ev.SeatReleased: RoundLog._on_seat_released,
    ev.PlayerDisconnected: RoundLog._on_player_disconnected,
    ev.DecisionAwaited: RoundLog._on_decision_awaited,
    ev.ActionTaken: RoundLog._on_action_taken,
    ev.RoundSettled: RoundLog._on_round_settled,
    ev.BetsRefunded: RoundLog._on_bets_refunded,
    ev.RoundVoided: RoundLog._on_round_voided,
    ev.IncidentRaised: RoundLog._on_incident_raised,
    ev.IncidentResolved: RoundLog._on_incident_resolved,
    ev.ShoeEnded: RoundLog._on_shoe_ended,
}
