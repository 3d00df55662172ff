"""The table API through Starlette's TestClient, with a bearer token per role."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


class ApiClient:
    """``post``/``get`` under ``/api/v1`` as a role; any other status than the expected one
    fails the test with the answer's body."""

    def __init__(self, client: TestClient, tokens: dict[str, str]) -> None:
        self.client = client
        self.tokens = tokens

    def h(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    @property
    def headers(self) -> dict[str, dict[str, str]]:
        return {role: self.h(role) for role in self.tokens}

    def post(self, path: str, role: str, body: Any = None, status: int = 200) -> Any:
        response = self.client.post(f"/api/v1{path}", json=body, headers=self.h(role))
        assert response.status_code == status, response.text
        return response.json()

    def get(self, path: str, role: str = "regulator", status: int = 200) -> Any:
        response = self.client.get(f"/api/v1{path}", headers=self.h(role))
        assert response.status_code == status, response.text
        return response.json()
