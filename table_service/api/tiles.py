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
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

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
from table_service.api.auth import _bearer, allowed, get_runtime, identify
from table_service.api.problems import AUTH, BODY, errors
from table_service.api.types import SEQ_MAX, CosignerKey, NoteLine
from table_service.errors import InvalidRequest, NotFound
from table_service.principals import Identity
from table_service.runtime import Runtime
from table_service.table import policy
from table_service.table.view import PUBLIC_VIEWER, ReadModel, model_view

_tree_lock = threading.Lock()


def _reader(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
) -> Identity | None:
    if get_runtime(request).settings.tlog_public:
        return None
    identity = identify(request, credentials)
    policy.check(policy.permit(identity, "tlog.read"))
    return identity


def _tree(request: Request) -> LogTree:
    with _tree_lock:
        tree = getattr(request.app.state, "log_tree", None)
        if tree is None:
            tree = LogTree(get_runtime(request).reads)
            request.app.state.log_tree = tree
        return tree


def _b64(items: list[bytes]) -> list[str]:
    return [base64.b64encode(x).decode("ascii") for x in items]


def _head(runtime: Runtime) -> int:
    with runtime.reads() as session:
        return EventStore.head(session)[0]


def _signed_size(runtime: Runtime) -> int:
    with runtime.reads() as session:
        cp = latest_checkpoint(session)
        return 0 if cp is None else cp.size


class InclusionProof(BaseModel):
    seq: int
    index: int
    size: int
    leaf_hash: str
    root: str
    hashes: list[str]


class ConsistencyProof(BaseModel):
    old: int
    new: int
    old_root: str
    new_root: str
    hashes: list[str]


class CosignatureStored(BaseModel):
    size: int
    stored: bool


def _content(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    return {
        200: {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}
    }


def _one_line(value: Any) -> Any:
    return value[:-1] if isinstance(value, str) and value.endswith("\n") else value


class CosignatureIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(ge=1, le=SEQ_MAX, strict=True)
    cosigner_key: CosignerKey
    # one note signature line ("— name base64"); its own final newline may come with it
    line: Annotated[NoteLine, BeforeValidator(_one_line)]


def tiles_router() -> APIRouter:
    router = APIRouter()

    @router.get(
        "/tlog/checkpoint",
        response_class=Response,
        responses={**_content("text/plain", "the signed checkpoint note"), **errors(*AUTH, 404)},
    )
    def checkpoint(request: Request, _: Identity | None = Depends(_reader)) -> Response:
        runtime = get_runtime(request)
        with runtime.reads() as session:
            cp = latest_checkpoint(session)
            if cp is None:
                raise NotFound("the log has no checkpoint yet")
            text = note_with_cosignatures(session, cp, runtime.signer.public_key)
        return Response(
            text,
            media_type="text/plain; charset=utf-8",
            headers={"Cache-Control": "no-cache, max-age=2"},
        )

    @router.get(
        "/tlog/tile/{tile_path:path}",
        response_class=Response,
        responses={
            **_content("application/octet-stream", "a tile or entry bundle"),
            **errors(*AUTH, 404),
        },
    )
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

    @router.get(
        "/api/v1/audit/proof/inclusion",
        response_model=InclusionProof,
        responses=errors(*AUTH, 404, 422),
    )
    def inclusion(
        request: Request,
        seq: int = Query(
            ..., ge=1, le=SEQ_MAX, description="Event sequence number (leaf index + 1)"
        ),
        size: int = Query(..., ge=1, le=SEQ_MAX, description="Tree size the proof is for"),
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
        proof = {
            "seq": seq,
            "index": seq - 1,
            "size": size,
            "leaf_hash": base64.b64encode(leaf).decode("ascii"),
            "root": base64.b64encode(root).decode("ascii"),
            "hashes": _b64(hashes),
        }
        return model_view(ReadModel("inclusion_proof", proof), PUBLIC_VIEWER)

    @router.get(
        "/api/v1/audit/proof/consistency",
        response_model=ConsistencyProof,
        responses=errors(*AUTH, 404, 422),
    )
    def consistency(
        request: Request,
        old: int = Query(..., ge=0, le=SEQ_MAX),
        new: int = Query(..., ge=1, le=SEQ_MAX),
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
        proof = {
            "old": old,
            "new": new,
            "old_root": base64.b64encode(old_root).decode("ascii"),
            "new_root": base64.b64encode(new_root).decode("ascii"),
            "hashes": _b64(hashes),
        }
        return model_view(ReadModel("consistency_proof", proof), PUBLIC_VIEWER)

    @router.post(
        "/api/v1/audit/cosignatures",
        status_code=201,
        response_model=CosignatureStored,
        responses=errors(*AUTH, *BODY),
    )
    def cosignature(
        body: CosignatureIn,
        request: Request,
        _: Identity = Depends(allowed("tlog.cosign")),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        try:
            with runtime.sessions.begin() as session:
                stored = store_cosignature(session, body.size, body.cosigner_key, body.line)
        except CosignatureRefused as exc:
            raise InvalidRequest(str(exc)) from exc
        answer = {"size": body.size, "stored": stored}
        return model_view(ReadModel("cosignature", answer), PUBLIC_VIEWER)

    return router
