"""What the consoles' HTTP tests share: a test client with one token per principal."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


class Rig:
    def __init__(self, client: TestClient, tokens: dict[str, str]) -> None:
        self.client = client
        self.tokens = tokens

    def h(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    def post(self, path: str, role: str, body: Any = None, status: int = 200) -> Any:
        response = self.client.post(f"/api/v1{path}", json=body, headers=self.h(role))
        assert response.status_code == status, response.text
        return response.json()

    def get(self, path: str, role: str | None = "regulator", status: int = 200) -> Any:
        headers = self.h(role) if role else {}
        response = self.client.get(f"/api/v1{path}", headers=headers)
        assert response.status_code == status, response.text
        return response.json()

    def cards(self, *cards: str) -> None:
        for card in cards:
            self.post("/tables/bac-1/cards", "supervisor", {"card": card})

    def ready(self) -> None:
        self.post("/tables/bac-1/shoe", "supervisor")
        self.cards("2S", "3H", "4H")

    def round(self, *cards: str, bets: list[dict[str, Any]] | None = None) -> None:
        self.post("/tables/bac-1/betting/open", "dealer")
        if bets:
            self.post("/tables/bac-1/bets", "operator", {"bets": bets})
        self.post("/tables/bac-1/betting/close", "dealer")
        self.cards(*cards)
