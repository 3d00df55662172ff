"""The bots' principals: created with ``add_principal`` and their tokens kept for reuse.

A token is only ever shown once, so the demo keeps its bots' tokens in a file in the data
folder (mode 0600). On the next run a token that still authenticates is reused; if the
file was lost, the old principal is revoked and a new one created under a fresh name.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from table_service.models import Principal
from table_service.principals import add_principal, authenticate, revoke_principal
from table_service.runtime import Runtime

TOKENS_FILE = "demo-principals.json"
ACTOR = "cli:demo"


@dataclass(frozen=True)
class BotPrincipal:
    name: str
    role: str
    token: str


def _load(path: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, data: dict[str, dict[str, str]]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.replace(tmp, path)


def ensure_principals(runtime: Runtime, data_dir: Path, table_id: str) -> dict[str, BotPrincipal]:
    """One principal per bot role (dealer bound to the table); reused when still valid."""
    wanted = {
        "dealer": ("demo-dealer", table_id),
        "supervisor": ("demo-supervisor", None),
        "operator": ("demo-operator", None),
        "regulator": ("demo-regulator", None),
    }
    path = data_dir / TOKENS_FILE
    known = _load(path)
    result: dict[str, BotPrincipal] = {}
    with runtime.sessions.begin() as session:
        for role, (base, bound) in wanted.items():
            saved = known.get(role, {})
            token = saved.get("token", "")
            identity = authenticate(session, token) if token else None
            if identity is not None and identity.role.value == role:
                result[role] = BotPrincipal(identity.name, role, token)
                continue
            suffix = 1
            while True:
                name = base if suffix == 1 else f"{base}-{suffix}"
                existing = session.get(Principal, name)
                if existing is None:
                    break
                if existing.revoked_at is None:
                    # Its token is lost with the file: nobody can use it, so retire it.
                    revoke_principal(session, runtime.store, name, actor=ACTOR)
                suffix += 1
            token = add_principal(session, runtime.store, name, role, table_id=bound, actor=ACTOR)
            result[role] = BotPrincipal(name, role, token)
    _save(path, {role: {"name": p.name, "token": p.token} for role, p in result.items()})
    return result
