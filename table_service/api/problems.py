"""One error shape for the whole API: RFC 9457 problem details with a stable ``code``.

Every refusal (a typed :class:`~table_service.errors.Refused`, an authentication or
routing error, a validation error, a body too large) is answered as
``application/problem+json`` with ``type``, ``title``, ``status``, ``detail`` and ``code``;
``code`` is what a client branches on, the rest is for people. A refusal's own details
(a balance, the known tables) ride along as extension members.

Routes declare which of these statuses they may answer with :func:`errors`; the OpenAPI
document is post-processed so every error response points at the one ``Problem`` schema.
"""

from __future__ import annotations

import math
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from table_service.errors import Refused
from table_service.table.view import refusal_details

log = structlog.get_logger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "urn:livetable:problem:"

# The stable code of an HTTP-level refusal that no typed error raised.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    500: "internal_error",
    503: "unavailable",
}


class ValidationItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """RFC 9457 problem details; ``code`` is stable, ``detail`` is for people."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="URI naming the kind of problem")
    title: str = Field(description="Short summary of the kind of problem")
    status: int = Field(ge=400, le=599)
    detail: str = Field(description="What went wrong with this request")
    code: str = Field(description="Stable machine-readable reason")
    error: str | None = Field(None, description="Deprecated alias of code", deprecated=True)
    errors: list[ValidationItem] | None = Field(
        None, description="Field errors of a request that failed validation"
    )


class ProblemResponse(JSONResponse):
    media_type = PROBLEM_MEDIA_TYPE


def _finite(value: Any) -> Any:
    """Details are echoed back as JSON: no NaN/Infinity and no unencodable strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {str(_finite(k)): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_finite(v) for v in value]
    return value


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> ProblemResponse:
    body: dict[str, Any] = {
        "type": TYPE_BASE + code,
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
        # Deprecated alias of ``code`` from before problem details; clients read ``code``.
        "error": code,
    }
    for key, value in extra.items():
        if key not in body:
            body[key] = _finite(jsonable_encoder(value))
    return ProblemResponse(body, status_code=status, headers=headers)


def problem_body(status: int, code: str, detail: str) -> bytes:
    """The same shape as bytes, for the ASGI middleware that answers before routing."""
    return bytes(problem(status, code, detail).body)  # typed bytes | memoryview


def _validation_items(exc: RequestValidationError) -> list[dict[str, Any]]:
    items = []
    for error in exc.errors():
        loc = [part if isinstance(part, int) else str(_finite(str(part))) for part in error["loc"]]
        items.append({"loc": loc, "msg": str(_finite(error["msg"])), "type": error["type"]})
    return items[:50]


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def refused(_: Request, exc: Refused) -> ProblemResponse:
        log.info("request.refused", code=exc.code, reason=exc.reason)
        wait = exc.details.get("retry_after")
        headers = {"Retry-After": str(math.ceil(wait))} if isinstance(wait, int | float) else None
        # another operator's bet id never leaves in a refusal either (the projection's rule)
        details = refusal_details(exc.details)
        return problem(exc.status, exc.code, exc.reason, headers=headers, **details)

    @app.exception_handler(DBAPIError)
    async def database(_: Request, exc: DBAPIError) -> ProblemResponse:
        from table_service.table.outage import RETRY_AFTER_SECONDS, outage

        cause = outage(exc)
        if cause is None:
            log.exception("request.failed", error_type=type(exc).__name__)
            return problem(500, "internal_error", "the server failed; the request was not applied")
        log.warning("request.database_unavailable", cause=cause, error=str(exc.orig)[:200])
        return problem(
            503,
            cause,
            "the database is unreachable or full; nothing was written, retry the same request",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            retry_after=RETRY_AFTER_SECONDS,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> ProblemResponse:
        code = HTTP_CODES.get(exc.status_code, "http_error")
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        return problem(exc.status_code, code, detail, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> ProblemResponse:
        items = _validation_items(exc)
        first = items[0] if items else None
        where = ".".join(str(p) for p in first["loc"]) if first else "request"
        detail = f"{where}: {first['msg']}" if first else "the request is not valid"
        return problem(422, "invalid_request", detail, errors=items)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> ProblemResponse:
        # Reaching this is a defect (the fuzzing test fails on any 5xx); the client still
        # gets the one error shape and no internals.
        log.exception("request.failed", error_type=type(exc).__name__)
        return problem(500, "internal_error", "the server failed; the request was not applied")


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route that may refuse with these statuses."""
    return {status: {"description": HTTPStatus(status).phrase} for status in statuses}


# Every authenticated route may answer these; a route with a body also 413/422.
AUTH = (401, 403)
BODY = (413, 422)


def install_problem_openapi(app: FastAPI) -> None:
    """Every error response in the OpenAPI document is a ``Problem`` as problem+json."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in (
            Problem.model_json_schema(ref_template="#/components/schemas/{model}")
            .get("$defs", {})
            .items()
        ):
            components[name] = definition
        problem_schema = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        problem_schema.pop("$defs", None)
        components["Problem"] = problem_schema
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        ref = {"$ref": "#/components/schemas/Problem"}
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content")
                    generic = content is None or "HTTPValidationError" in str(content)
                    if status.isdigit() and int(status) >= 400 and generic:
                        response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": ref}}
        app.openapi_schema = schema
        return schema

    # FastAPI's documented way to extend its schema: replace the app's openapi method.
    app.openapi = openapi  # type: ignore[method-assign]
