"""A small async client for the table API, as the bots (and any integrator) use it."""

from __future__ import annotations

from typing import Any

import httpx


class ApiError(Exception):
    """The API refused a request; ``code`` and ``reason`` are the server's own words."""

    def __init__(self, status: int, code: str, reason: str, body: Any = None) -> None:
        super().__init__(f"HTTP {status} {code}: {reason}")
        self.status = status
        self.code = code
        self.reason = reason
        self.body = body


class ApiClient:
    """One principal's view of the API (its bearer token on every request)."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 15.0) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            # Drop idle connections well before the server's keep-alive timeout, so a
            # request never races the server closing the connection it was sent on.
            limits=httpx.Limits(keepalive_expiry=2.0),
        )

    async def get(self, path: str, **params: Any) -> Any:
        return self._answer(await self.http.get(f"/api/v1{path}", params=params or None))

    async def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._answer(await self.http.post(f"/api/v1{path}", json=body or {}))

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            if isinstance(data, dict):
                # RFC 9457 problem details: ``code`` is stable, ``detail`` for people.
                code = str(data.get("code", data.get("error", "http_error")))
                reason = str(data.get("detail", data.get("reason", response.text)))
            else:
                code, reason = "http_error", response.text
            raise ApiError(response.status_code, code, reason, data)
        return data

    async def close(self) -> None:
        await self.http.aclose()
