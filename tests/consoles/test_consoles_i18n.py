"""Every text the pages show has its English and its Vietnamese: a walk over each page's
translation keys (the ones written in the pages and their scripts, and every value a
dynamic key can take: each game's phases, incident kinds, steps of the log, bet types,
moves …), failing on any key without a Vietnamese text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shoe_reader.events import SHOW_AGAIN
from table_service.consoles import approvals
from table_service.consoles.lookup import DUTY_EVENT
from table_service.consoles.routes import PAGES, page_html
from table_service.principals import Role
from table_service.rules.blackjack.round_state import Answer, Move
from table_service.rules.games import GAMES
from table_service.rules.xidach.hands import Kind
from table_service.rules.xidach.profile import PUNTER_ACTIONS
from table_service.rules.xidach.state import Result
from table_service.table.config import TableConfig
from table_service.table.events import CLASSES
from table_service.table.incidents import TABLE_INCIDENTS, catalogue

CONSOLES = Path(__file__).parents[2] / "table_service" / "consoles"
STATIC = CONSOLES / "static"
TABLE = Path(__file__).parents[2] / "table_service" / "table"
ENTRY = re.compile(r'^\s*("(?:[^"\\]|\\.)+")\s*:\s*("(?:[^"\\]|\\.)*"),?\s*$')


def dictionaries() -> dict[str, dict[str, str]]:
    text = (STATIC / "i18n.js").read_text(encoding="utf-8")
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        opened = re.match(r"^  ([a-z]{2}): \{$", line)
        if opened:
            current = blocks.setdefault(opened.group(1), {})
            continue
        found = ENTRY.match(line)
        if found and current is not None:
            key, value = json.loads(found.group(1)), json.loads(found.group(2))
            assert key not in current, f"{key} twice"
            current[key] = value
    return blocks


def scripts_of(page: str) -> list[str]:
    return list(PAGES[page][2])  # i18n.js, the dictionary itself, comes first on each


def sources(page: str) -> str:
    return page_html(page) + "".join(
        (STATIC / f"{name}.js").read_text(encoding="utf-8") for name in scripts_of(page)
    )


HTML_KEY = re.compile(r"""data-(?:i18n|app|title)=["']([a-z][a-z0-9_]*\.[a-z0-9_.]+)["']""")
# Any string literal shaped like a key in a script is one (t("x.y"), a list of column
# keys, a ternary between two keys …), but for the storage keys and the sub-protocol.
SCRIPT_KEY = re.compile(r"""["']([a-z][a-z0-9_]*\.[a-z0-9_]+)["']""")
DYNAMIC = re.compile(r"""(?:\bt\(|\bhas\()\s*`([a-z_]+)\.\$\{|\bterm\(\s*"([a-z_]+)\"""")
NOT_KEYS = ("lt.", "livetable.")


REGISTRY_BY_CLASS = {cls.__name__: cls.TYPE for cls in CLASSES}


def emitted_event_types() -> set[str]:
    """Every event type the table writes (the steps a recall lists)."""
    found: set[str] = set()
    for path in TABLE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'\bemit(?:_chunks)?\(\s*"([a-z_]+)"', text))
        # a typed event (ev.CardDealt(...)) writes its class's stored type
        found |= {REGISTRY_BY_CLASS[n] for n in re.findall(r"\bev\.([A-Z]\w+)\(", text)}
    assert {"card_dealt", "bets_placed", "round_voided"} <= found
    return found | {DUTY_EVENT, approvals.REQUESTED, approvals.APPROVED}


def set_aside_reasons() -> set[str]:
    """Why the table sets a card aside (``card_set_aside`` reasons)."""
    sources = [TABLE / "decide.py", *(TABLE / "decide").glob("*.py")]  # a module or a package
    text = "".join(p.read_text(encoding="utf-8") for p in sources if p.exists())
    # a payload's key or a typed event's keyword: "reason": "x", reason="x"
    found = set(re.findall(r'\breason"?\]? ?[:=] ?"([a-z_]+)"', text))
    assert {"unneeded", "foreign_card"} <= found, found
    return found


def bet_types() -> set[str]:
    out: set[str] = set()
    for name in GAMES:
        config = TableConfig(table_id="t", game=name)
        out |= set(config.game_impl.bet_types(config.rules))
    return out


def domains() -> dict[str, set[str]]:
    """What each dynamic key prefix can be followed by."""
    kinds = set(TABLE_INCIDENTS)
    for name in GAMES:
        kinds |= set(catalogue(name))
    return {
        "phase": {"betting", "dealing", "decision", "result", "settled", "voided"},
        "game": set(GAMES),
        "role": {r.value for r in Role},
        "stream": {"connecting", "reconnecting", "live"},
        "reader": {"shoe", "camera"},
        "cause": set(SHOW_AGAIN),  # why a camera asks for a card again
        "incident": kinds,
        "step": emitted_event_types(),
        "bet": bet_types() | {"insurance"},  # blackjack's insurance stakes
        "move": {m.value for m in Move}
        | {a.value for a in Answer}
        | set(PUNTER_ACTIONS)
        | {"check", "leave", "hide"},
        "house": {"draw", "stand", "check_all"},
        "hand": {
            "player",
            "banker",
            "dealer",
            "bust",
            "blackjack",
            "doubled",
            "surrendered",
            "auto",
        },
        "class": {k.value for k in Kind},
        "outcome": {r.value for r in Result},
        "line": {"win", "lose", "push", "refunded", "half_refund", "forfeited"},
        "result": {"player", "banker", "tie"},
        "source": {"reader", "manual", "carried"},
        "aside": set_aside_reasons(),
        "pos": {"P1", "P2", "P3", "B1", "B2", "B3", "DEALER", "BANKER"},
        "recall": {"steps", "bets", "incidents", "settlement", "settle_input"},
        "roads": {"B", "P", "T"},
        "detail": set(),  # an open set: the log's payload keys, each shown as is without one
        "status": set(),  # no game's view gives a hand a status word today
        "verdict": {"win", "lose", "push", "half_refund"},  # a hand's outcome on the overlay
        "tally": {"win", "push", "lose"},
        # who acted, by the kind of principal (a recall step's actor)
        "actor": {"reader", "dealer", "supervisor", "operator", "regulator", "admin", "cli"},
        "auto": {"timeout", "disconnected"},  # why the rules played a decision
        "close": {"countdown", "dealer"},  # why betting closed (others read as written)
        "bet_status": {"open", "settled", "refunded"},
    }


# Vietnamese that is rightly the same as the English: names and symbols.
SAME_IN_BOTH = {
    "auth.signed_in",
    "game.baccarat",
    "game.blackjack",
    "game.xidach",
    "reader.camera",
    "class.xi_bang",
    "class.xi_dach",
    "class.ngu_linh",
    "bj.blackjack",
    "hand.blackjack",
    "hand.blackjack_name",
    "xd.xidach",
    "xd.xibang",
    "xd.ngulinh",
    "xd.quac",
    "paused.reason",
    "form.index_at",
    "bet.lucky6",
    "roads.rounds",
}


def keys_of(page: str) -> set[str]:
    text = sources(page)
    keys = set(HTML_KEY.findall(text))
    keys |= {k for k in SCRIPT_KEY.findall(text) if not k.startswith(NOT_KEYS)}
    known = domains()
    for prefix_t, prefix_term in DYNAMIC.findall(text):
        prefix = prefix_t or prefix_term
        assert prefix in known, f"{page}: a dynamic key {prefix}.… whose values the test lacks"
        keys |= {f"{prefix}.{value}" for value in known[prefix]}
    return keys


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_key_of_each_page_has_its_english_and_vietnamese(page: str) -> None:
    words = dictionaries()
    assert set(words) == {"en", "vi"}
    keys = keys_of(page)
    assert len(keys) > 40, keys
    # keys the dictionary lacks in either language; pos.* and result.* the pages only use
    # where the dictionary has them (other positions read as their codes)
    guarded = ("pos.", "result.", "hand.", "class.", "outcome.", "detail.", "status.")
    missing = sorted(
        k
        for k in keys
        if not k.startswith(guarded) and (k not in words["en"] or k not in words["vi"])
    )
    assert not missing, f"{page}: no text for {missing}"
    for key in keys & set(words["en"]):
        vi = words["vi"].get(key)
        assert vi, f"{page}: {key} has no Vietnamese text"
        if key not in SAME_IN_BOTH and words["en"][key]:
            assert vi != words["en"][key], f"{page}: {key} is English in Vietnamese: {vi!r}"


def test_both_languages_have_the_same_keys_and_placeholders() -> None:
    words = dictionaries()
    en, vi = words["en"], words["vi"]
    procedures = {k for k in vi if k.startswith("procedure.")}
    assert set(en) == set(vi) - procedures
    for key, text in en.items():
        assert sorted(re.findall(r"\{(\w+)\}", text)) == sorted(
            re.findall(r"\{(\w+)\}", vi[key])
        ), key


def test_no_text_is_left_that_no_page_shows() -> None:
    """A text no page uses has drifted from the pages (the log's payload keys, an open
    set, aside, and steps the dictionary names before the table writes them)."""
    used = set().union(*(keys_of(page) for page in PAGES)) | {"lang.name"}
    ahead = ("detail.", "step.")
    unused = sorted(k for k in dictionaries()["en"] if k not in used and not k.startswith(ahead))
    assert not unused


def test_every_procedure_of_every_catalogue_reads_in_vietnamese() -> None:
    """The English is the catalogue's own text (one place); the dictionary holds only its
    Vietnamese, one for each entry of each game's catalogue and of the table's."""
    words = dictionaries()
    wanted = {f"procedure.{name}.{kind}" for name, game in GAMES.items() for kind in game.incidents}
    wanted |= {f"procedure.table.{kind}" for kind in TABLE_INCIDENTS}
    have = {k for k in words["vi"] if k.startswith("procedure.")}
    assert wanted == have, (sorted(wanted - have), sorted(have - wanted))
    assert not any(k.startswith("procedure.") for k in words["en"])


def test_the_game_terms_are_those_of_the_rule_texts() -> None:
    vi = dictionaries()["vi"]
    assert vi["hand.banker"] == "Nhà cái" and vi["hand.player"] == "Nhà con"
    assert vi["result.tie"] == "HÒA" and vi["bet.tie"] == "Hòa"
    assert vi["class.xi_dach"] == "Xì Dách" and vi["class.xi_bang"] == "Xì Bàng"
    assert vi["class.ngu_linh"] == "Ngũ Linh" and vi["class.quac"].startswith("Quắc")
    assert "xét bài" in vi["move.check"].lower()
