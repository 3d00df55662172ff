"""`/docs` and `/redoc` work with no internet: every asset they load is served by the app."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from fastapi.testclient import TestClient

from table_service.app import create_app
from table_service.runtime import Runtime

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\s*:\s*["']([^"']+)["']""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_only_local_assets(runtime: Runtime, page: str) -> None:
    client = TestClient(create_app(runtime))
    html = client.get(page)
    assert html.status_code == 200
    assert "cdn" not in html.text.lower()
    urls = [a or b for a, b in ASSET.findall(html.text)]
    assert urls, html.text
    scripts = []
    for url in urls:
        assert not re.match(r"(?:https?:)?//", url), f"{page} loads {url} from outside"
        asset = client.get(urljoin(f"http://testserver{page}", url))
        assert asset.status_code == 200, url
        assert asset.content, url
        if url.endswith(".js"):
            scripts.append(asset.text)
    assert scripts and max(len(s) for s in scripts) > 100_000  # the UI bundle itself
    assert "/openapi.json" in html.text


def test_swagger_ui_bundle_reads_openapi_3_1(runtime: Runtime) -> None:
    """FastAPI writes OpenAPI 3.1; Swagger UI renders 3.1 only from version 5 on."""
    client = TestClient(create_app(runtime))
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")
    html = client.get("/docs").text
    bundle = next(u for u in re.findall(r'src="([^"]+)"', html) if "swagger-ui" in u)
    text = client.get(bundle).text
    assert "OpenAPI 3.1" in text or "isOAS31" in text
