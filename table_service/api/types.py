"""Strict types at the edge of the API, for every route to reuse.

What a hostile client sends is refused here, as a 422 problem, before any handler runs:
money that is not a JSON integer in range (no ``100.0``, ``1e3``, ``"100"`` or ``true``),
text with control characters or lone surrogates, identifiers outside a safe alphabet,
free-form JSON that is too deep, too large or holds floats, sequence numbers past what
the database stores.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Annotated, Any

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict

# Money: integer minor units. The schema's bound is the ceiling no configuration may pass;
# the configured maximum (Settings.max_amount, default 10^12) is checked where money moves.
MONEY_CEILING = 10**12
# Sequence numbers and other integer query parameters: what a BIGINT holds.
SEQ_MAX = 2**63 - 1

Money = Annotated[
    int,
    Strict(),
    Field(ge=1, le=MONEY_CEILING, description="integer minor units (no floats, no strings)"),
]

# Characters no identifier, key, reference, name or note may hold: what is invisible or
# changes how the text around it is shown, so that a console or an export could show a
# reference other than the stored one (U+202E turns "1000" round, U+200B hides a
# difference between two keys). By Unicode general category: Cc controls, Cf format
# characters (the bidirectional embeddings, overrides and isolates U+202A-202E and
# U+2066-2069, the marks U+200E/U+200F/U+061C, zero-width U+200B-200D and U+2060, the BOM
# U+FEFF, the tag characters), Cs lone surrogates, Co private use, Cn unassigned code
# points and the noncharacters (U+FDD0-FDEF, U+xFFFE/U+xFFFF), Zl and Zp line and
# paragraph separators. Letters, marks and spaces of every script stay allowed.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMES = {"Cc": "a control character", "Cf": "a format or bidirectional control character",
          "Cs": "a lone surrogate", "Co": "a private-use character",
          "Cn": "an unassigned code point or noncharacter", "Zl": "a line separator",
          "Zp": "a paragraph separator"}  # fmt: skip
_ASCII_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def refused_character(value: str, *, allow: str = "") -> str | None:
    """Why ``value`` may not be stored as text (``None``: it may). ``allow``: characters
    let through anyway (a note's newline and tab)."""
    if _ASCII_PRINTABLE.fullmatch(value):
        return None  # the common case, without a per-character lookup
    for index, ch in enumerate(value):
        if ch in allow:
            continue
        category = unicodedata.category(ch)
        if category in REFUSED_CATEGORIES:
            return f"{_NAMES[category]} (U+{ord(ch):04X}) at position {index} is not allowed"
    return None


def _clean_text(value: str) -> str:
    """One line of visible text: no controls (NUL, newlines), format, bidirectional,
    private-use, unassigned or separator characters, no lone surrogates."""
    problem = refused_character(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _clean_note(value: str) -> str:
    """Notes may span lines (newline, tab); otherwise the same characters as one line."""
    problem = refused_character(value, allow="\n\t")
    if problem is not None:
        raise ValueError(problem)
    return value


IDENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

# Account ids, table ids, bet types, incident kinds: a safe alphabet, nothing to escape.
Ident = Annotated[str, Field(min_length=1, max_length=64, pattern=IDENT_PATTERN)]
AccountId = Ident
# A table id in a route's path (an example so that fuzzing reaches a real table too).
TablePath = Annotated[
    str, Path(min_length=1, max_length=64, pattern=IDENT_PATTERN, examples=["bac-1"])
]


class OpenModel(BaseModel):
    """An answer whose exact members depend on the game or the view; the named ones are
    always there, the rest are documented where the route is."""

    model_config = ConfigDict(extra="allow")


# Principal names: no ':' or '|' so that "role:name|key" scoping can never collide.
PrincipalName = Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)]
# Idempotency keys and transfer references: printable, no controls.
Key = Annotated[
    str,
    Field(min_length=1, max_length=100, description="idempotency key, unique per principal"),
    AfterValidator(_clean_text),
]
Reason = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_clean_text)]
Note = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_note)]
# A cosigner's key name and one line of a signed note (audit/tiles: a witness's cosignature).
CosignerKey = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_clean_text)]
NoteLine = Annotated[str, Field(min_length=1, max_length=1024), AfterValidator(_clean_text)]

# -- bounded free-form JSON (incident details) ------------------------------------------------
DETAILS_MAX_BYTES = 4096
DETAILS_MAX_DEPTH = 4
DETAILS_MAX_ITEMS = 64
JSON_INT_BOUND = 2**53 - 1


def _check_json(value: Any, depth: int) -> None:
    if depth > DETAILS_MAX_DEPTH:
        raise ValueError(f"nested deeper than {DETAILS_MAX_DEPTH} levels")
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > JSON_INT_BOUND:
            raise ValueError("integers must be within ±(2^53−1)")
        return
    if isinstance(value, float):
        raise ValueError("floats are not allowed; use integers or strings")
    if isinstance(value, str):
        _clean_note(value)
        return
    if isinstance(value, list):
        if len(value) > DETAILS_MAX_ITEMS:
            raise ValueError(f"a list holds at most {DETAILS_MAX_ITEMS} items")
        for item in value:
            _check_json(item, depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > DETAILS_MAX_ITEMS:
            raise ValueError(f"an object holds at most {DETAILS_MAX_ITEMS} members")
        for key, item in value.items():
            if not isinstance(key, str) or not key or len(key) > 64:
                raise ValueError("object keys are 1–64 characters")
            _clean_text(key)
            _check_json(item, depth + 1)
        return
    raise ValueError(f"{type(value).__name__} is not JSON")


def _bounded_json(value: dict[str, Any]) -> dict[str, Any]:
    _check_json(value, 1)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > DETAILS_MAX_BYTES:
        raise ValueError(f"at most {DETAILS_MAX_BYTES} bytes as JSON (got {size})")
    return value


BoundedJson = Annotated[
    dict[str, Any],
    AfterValidator(_bounded_json),
    Field(
        description=(
            f"free-form JSON object: at most {DETAILS_MAX_BYTES} bytes, {DETAILS_MAX_DEPTH}"
            " levels, no floats"
        )
    ),
]
