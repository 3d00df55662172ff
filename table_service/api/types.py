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

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _clean_text(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("control characters (NUL, newlines, ...) are not allowed")
    for ch in value:
        if unicodedata.category(ch) == "Cs":
            raise ValueError("lone surrogates are not allowed")
    return value


def _clean_note(value: str) -> str:
    """Notes may span lines; still no NUL or other controls, no lone surrogates."""
    if _CONTROL.search(value.replace("\n", "").replace("\t", "")):
        raise ValueError("control characters other than newline and tab are not allowed")
    for ch in value:
        if unicodedata.category(ch) == "Cs":
            raise ValueError("lone surrogates are not allowed")
    return value


def text(max_length: int, *, min_length: int = 1, description: str | None = None) -> Any:
    """A one-line printable string of bounded length."""
    return Annotated[
        str,
        Field(min_length=min_length, max_length=max_length, description=description),
        AfterValidator(_clean_text),
    ]


def note(max_length: int, *, min_length: int = 1) -> Any:
    return Annotated[
        str, Field(min_length=min_length, max_length=max_length), AfterValidator(_clean_note)
    ]


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
Key = text(100, description="idempotency key, unique per principal")
Reason = text(500)
Note = note(1000)

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
