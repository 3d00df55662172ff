"""Request-body limits, enforced before any route parses anything.

A pure ASGI middleware: it reads the body once (refusing with 413 as soon as it passes
the limit, whatever ``Content-Length`` claimed), checks that a JSON body is JSON a strict
parser accepts — no ``NaN``/``Infinity``, no lone surrogates, no nesting past a depth
limit, no member name given twice in one object — and hands the same bytes on.

A repeated name is refused rather than resolved: parsers disagree on which value wins
(Python's and most JavaScript parsers take the last, many gateways and signers the first),
so ``{"amount": 1, "amount": 1000000}`` could be checked as 1 and credited as 1,000,000.

A refused body is answered with a problem document and never reaches a handler, so it can
have changed nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from table_service.api.problems import PROBLEM_MEDIA_TYPE, problem_body
from table_service.errors import Refused

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 1_000_000
MAX_JSON_DEPTH = 32


class BodyRefused(Refused):
    """A body refused before routing (its status: 400, 413 or 422)."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


def _reject_constant(name: str) -> Any:
    raise BodyRefused(422, "invalid_json", f"{name} is not JSON")


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object whose member names are all different."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        twice = ""
        for name, _ in pairs:
            if name in seen:
                twice = name
                break
            seen.add(name)
        raise BodyRefused(
            422, "duplicate_key", f"member {twice[:64]!r} is given twice in one JSON object"
        )
    return value


def _check_tree(value: Any, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise BodyRefused(422, "invalid_json", f"JSON nested deeper than {MAX_JSON_DEPTH}")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BodyRefused(422, "invalid_json", "a lone surrogate is not text") from None
    elif isinstance(value, list):
        for item in value:
            _check_tree(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_tree(key, depth + 1)
            _check_tree(item, depth + 1)


def _depth_prescan(body: bytes) -> None:
    """Refuse absurd nesting before ``json.loads`` recurses into it."""
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise BodyRefused(422, "invalid_json", f"JSON nested deeper than {MAX_JSON_DEPTH}")
        elif byte in (0x5D, 0x7D):
            depth -= 1


def check_json_body(body: bytes) -> None:
    if not body.strip():
        return
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH:
        _depth_prescan(body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyRefused(422, "invalid_json", "the body is not UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_members)
    except BodyRefused:
        raise
    except (ValueError, RecursionError) as exc:
        raise BodyRefused(422, "invalid_json", f"the body is not JSON: {exc}") from None
    _check_tree(value, 1)


class BodyLimits:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        try:
            declared = headers.get(b"content-length")
            if declared is not None:
                try:
                    length = int(declared)
                except ValueError:
                    raise BodyRefused(
                        400, "bad_request", "Content-Length is not a number"
                    ) from None
                if length > self.max_body_bytes:
                    raise self._too_large()
            body = await self._read(receive)
            content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            # FastAPI reads a body without a content type as JSON too.
            if body and (
                content_type in (b"", b"application/json") or content_type.endswith(b"+json")
            ):
                check_json_body(body)
        except BodyRefused as refused:
            await self._answer(send, refused)
            return

        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> BodyRefused:
        return BodyRefused(
            413, "body_too_large", f"a request body is at most {self.max_body_bytes} bytes"
        )

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    @staticmethod
    async def _answer(send: Send, refused: BodyRefused) -> None:
        body = problem_body(refused.status, refused.code, refused.detail)
        headers = [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        if refused.status == 413:  # the rest of the body was never read: end the connection
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
