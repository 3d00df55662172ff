"""The log, read-only, for standard clients: c2sp.org/tlog-tiles at ``/tlog/``, RFC 9162
inclusion and consistency proofs, and the door through which witnesses hand back their
cosignatures.

Tiles and proofs are served only for sizes the log has reached; full tiles never change
and say so in their caching headers. Without ``LIVETABLE_TLOG_PUBLIC=1`` every route
needs a regulator, supervisor or admin token.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from audit.proof import ProofError
from audit.published import (
    CosignatureRefused,
    latest_checkpoint,
    note_with_cosignatures,
    store_cosignature,
)
from audit.store import EventStore
from audit.tiles import TILE_WIDTH, TilePathError, available, parse_tile_path
from audit.tree import LogTree
from table_service.api.auth import _bearer, get_runtime, identify, require
from table_service.errors import InvalidRequest, NotFound
from table_service.principals import Identity, Role
from table_service.runtime import Runtime

_READERS = (Role.REGULATOR, Role.SUPERVISOR, Role.ADMIN)
_tree_lock = threading.Lock()


def _reader(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
) -> Identity | None:
    if get_runtime(request).settings.tlog_public:
        return None
    return require(*_READERS)(identify(request, credentials))


def _tree(request: Request) -> LogTree:
    with _tree_lock:
        tree = getattr(request.app.state, "log_tree", None)
        if tree is None:
            tree = LogTree(get_runtime(request).sessions)
            request.app.state.log_tree = tree
        return tree


def _b64(items: list[bytes]) -> list[str]:
    return [base64.b64encode(x).decode("ascii") for x in items]


def _head(runtime: Runtime) -> int:
    with runtime.sessions() as session:
        return EventStore.head(session)[0]


def _signed_size(runtime: Runtime) -> int:
    with runtime.sessions() as session:
        cp = latest_checkpoint(session)
        return 0 if cp is None else cp.size


class CosignatureIn(BaseModel):
    size: int = Field(ge=1)
    cosigner_key: str = Field(min_length=1, max_length=512)
    line: str = Field(min_length=1, max_length=1024)


def tiles_router() -> APIRouter:
    router = APIRouter()

    @router.get("/tlog/checkpoint")
    def checkpoint(request: Request, _: Identity | None = Depends(_reader)) -> Response:
        runtime = get_runtime(request)
        with runtime.sessions() as session:
            cp = latest_checkpoint(session)
            if cp is None:
                raise NotFound("the log has no checkpoint yet")
            text = note_with_cosignatures(session, cp, runtime.signer.public_key)
        return Response(
            text,
            media_type="text/plain; charset=utf-8",
            headers={"Cache-Control": "no-cache, max-age=2"},
        )

    @router.get("/tlog/tile/{tile_path:path}")
    def tile(tile_path: str, request: Request, _: Identity | None = Depends(_reader)) -> Response:
        try:
            ref = parse_tile_path(tile_path)
        except TilePathError as exc:
            raise NotFound(f"no such tile: {exc}") from exc
        runtime = get_runtime(request)
        if not available(ref, _signed_size(runtime)):
            raise NotFound(f"tile {ref.path} is beyond the latest checkpoint")
        tree = _tree(request)
        try:
            if ref.level is None:
                body = tree.entries(ref.index, ref.width)
            else:
                body = tree.tile(ref.level, ref.index, ref.width)
        except LookupError as exc:
            raise NotFound(str(exc)) from exc
        cache = "public, max-age=31536000, immutable" if ref.width == TILE_WIDTH else "max-age=60"
        return Response(
            body, media_type="application/octet-stream", headers={"Cache-Control": cache}
        )

    @router.get("/api/v1/audit/proof/inclusion")
    def inclusion(
        request: Request,
        seq: int = Query(..., ge=1, description="Event sequence number (leaf index + 1)"),
        size: int = Query(..., ge=1, description="Tree size the proof is for"),
        _: Identity | None = Depends(_reader),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        head = _head(runtime)
        if size > head:
            raise NotFound(f"the log has {head} events, not {size}")
        if seq > size:
            raise InvalidRequest(f"event {seq} is not in a tree of size {size}")
        tree = _tree(request)
        try:
            hashes = tree.inclusion(seq - 1, size)
            root = tree.root(size)
            leaf = tree.leaf(seq - 1)
        except (ProofError, LookupError) as exc:
            raise InvalidRequest(str(exc)) from exc
        return {
            "seq": seq,
            "index": seq - 1,
            "size": size,
            "leaf_hash": base64.b64encode(leaf).decode("ascii"),
            "root": base64.b64encode(root).decode("ascii"),
            "hashes": _b64(hashes),
        }

    @router.get("/api/v1/audit/proof/consistency")
    def consistency(
        request: Request,
        old: int = Query(..., ge=0),
        new: int = Query(..., ge=1),
        _: Identity | None = Depends(_reader),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        head = _head(runtime)
        if new > head:
            raise NotFound(f"the log has {head} events, not {new}")
        if old > new:
            raise InvalidRequest(f"old size {old} is larger than new size {new}")
        tree = _tree(request)
        try:
            hashes = tree.consistency(old, new)
            old_root, new_root = tree.root(old), tree.root(new)
        except (ProofError, LookupError) as exc:
            raise InvalidRequest(str(exc)) from exc
        return {
            "old": old,
            "new": new,
            "old_root": base64.b64encode(old_root).decode("ascii"),
            "new_root": base64.b64encode(new_root).decode("ascii"),
            "hashes": _b64(hashes),
        }

    @router.post("/api/v1/audit/cosignatures", status_code=201)
    def cosignature(
        body: CosignatureIn,
        request: Request,
        _: Identity = Depends(require(Role.REGULATOR, Role.ADMIN)),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        try:
            with runtime.sessions.begin() as session:
                stored = store_cosignature(session, body.size, body.cosigner_key, body.line)
        except CosignatureRefused as exc:
            raise InvalidRequest(str(exc)) from exc
        return {"size": body.size, "stored": stored}

    return router
