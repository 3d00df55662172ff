"""A table command as a route: one helper for every route whose body is "parse, build the
command, let the table run it (the policy decides there), answer with the table as the
caller may see it".

Each command route is one :class:`CommandRoute` line in its resource's module (dealing,
incidents, seats): its path, its name (the OpenAPI operation), the command the policy
knows it by, the body it takes and how the command is built from them. The endpoint
FastAPI sees has the signature such a route would have written out (the table's path id,
any further path parameter, the body, the request, the principal), so the OpenAPI
document is the one the hand-written routes gave.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from table_service.api.auth import acting
from table_service.api.viewers import viewer_for
from table_service.principals import Identity
from table_service.routes.common import TableId, command_errors, table_of
from table_service.routes.models import CommandAnswer
from table_service.table import commands as c
from table_service.table.audience import Audience
from table_service.table.service import TableService
from table_service.table.view import ReadModel, model_view, table_view


async def run(table_id: str, request: Request, who: Identity, command: c.Command) -> dict[str, Any]:
    """Run ``command`` as ``who`` at the table; its answer, the log's head and the table
    as ``who`` may see it."""
    service = table_of(table_id, request)
    outcome = await service.execute(command, actor=who)  # the policy decides, there
    state = service.state
    viewer = viewer_for(request, who)
    if viewer.role is Audience.OWNER:  # its owner lookups read the database: not here
        summary = await asyncio.to_thread(table_view, state, viewer)
    else:
        summary = table_view(state, viewer)
    answer = {**outcome.answer, "seq": state.last_seq, "table": summary}
    return model_view(ReadModel("answer", answer), viewer)


Build = Callable[[Any, Mapping[str, Any]], c.Command]


@dataclass(frozen=True)
class CommandRoute:
    """``POST /tables/{table_id}<path>``: ``kind`` is the command the policy authorizes
    (before the body is parsed); ``build(body, params)`` makes the command from the body
    (None without one) and the further path parameters; ``check`` is asked with the table
    before it runs (a void above the threshold needs a second supervisor)."""

    path: str
    name: str
    kind: type
    build: Build
    body: type[BaseModel] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[TableService], None] | None = None
    doc: str | None = None


def _endpoint(route: CommandRoute) -> Callable[..., Any]:
    async def endpoint(**values: Any) -> dict[str, Any]:
        table_id, request, who = values.pop("table_id"), values.pop("request"), values.pop("who")
        command = route.build(values.pop("body", None), values)
        if route.check is not None:
            route.check(table_of(table_id, request))
        return await run(table_id, request, who, command)

    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("table_id", keyword, annotation=TableId)]
    parameters += [inspect.Parameter(n, keyword, annotation=a) for n, a in route.params.items()]
    if route.body is not None:
        parameters.append(inspect.Parameter("body", keyword, annotation=route.body))
    parameters.append(inspect.Parameter("request", keyword, annotation=Request))
    who = Depends(acting(route.kind))
    parameters.append(inspect.Parameter("who", keyword, annotation=Identity, default=who))
    # what FastAPI reads (inspect.signature): the route as it would be written out
    endpoint.__dict__["__signature__"] = inspect.Signature(
        parameters, return_annotation=dict[str, Any]
    )
    endpoint.__name__ = endpoint.__qualname__ = route.name
    endpoint.__doc__ = route.doc
    return endpoint


def add_commands(router: APIRouter, routes: Iterable[CommandRoute]) -> None:
    """Each command route on ``router``, answering the table's :class:`CommandAnswer`."""
    for route in routes:
        router.post(
            f"/tables/{{table_id}}{route.path}",
            response_model=CommandAnswer,
            response_model_exclude_unset=True,
            responses=command_errors(),
        )(_endpoint(route))
