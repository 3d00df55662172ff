"""`/docs` in a real browser with every request outside the service refused: Swagger UI
comes from the packaged assets and renders the API, as it must in a studio with no internet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from tests.browser.browser_helpers import Studio


def test_swagger_ui_renders_offline(browser: Any, make_studio: Callable[..., Studio]) -> None:
    studio = make_studio()
    local = urlparse(studio.base_url).netloc
    context = browser.new_context()
    outside: list[str] = []

    def route(r: Any) -> None:
        if urlparse(r.request.url).netloc == local:
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{studio.base_url}/docs")
        page.wait_for_selector(".opblock", timeout=20_000)
        operations = page.locator(".opblock").count()
        title = page.locator(".info .title").inner_text()
        paths = page.locator(".opblock-summary-path").all_inner_texts()
    finally:
        context.close()
    assert outside == [], f"/docs asked for {outside}"
    assert errors == []
    assert title.startswith("livetable")
    assert operations >= 20
    assert any("/api/v1/tables/{table_id}/bets" in p.replace("\u200b", "") for p in paths)
