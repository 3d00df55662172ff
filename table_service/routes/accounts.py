"""An operator's accounts: money in and out (only its own; another operator's account is
unknown to it), and an account's read through the projection."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request

from table_service.api.auth import allowed, get_runtime
from table_service.api.problems import AUTH, BODY, errors
from table_service.api.viewers import viewer_for
from table_service.principals import Identity
from table_service.routes.common import PathId
from table_service.routes.models import AccountOut, TransferIn, TransferOut
from table_service.table.view import ReadModel, model_view, viewer_of
from table_service.table.wallet import Transfer, account_view, transfer


async def _move(
    account: str, body: TransferIn, request: Request, who: Identity, way: Literal["credit", "debit"]
) -> dict[str, Any]:
    item = Transfer(account, body.amount, body.reference, way)
    done = await asyncio.to_thread(transfer, get_runtime(request), item, actor=who.actor)
    # a transfer the policy let through is of the caller's own account (``may_fund``): its
    # owner is known without reading the database again
    viewer = viewer_of(who, owns=lambda named: named == account)
    return model_view(ReadModel("transfer", done), viewer)


def add_accounts(router: APIRouter) -> None:
    money_errors = errors(*AUTH, 402, 404, 409, *BODY)

    @router.post("/accounts/{account}/credit", response_model=TransferOut, responses=money_errors)
    async def credit(
        account: PathId,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(allowed("account.credit")),
    ) -> dict[str, Any]:
        return await _move(account, body, request, who, "credit")

    @router.post("/accounts/{account}/debit", response_model=TransferOut, responses=money_errors)
    async def debit(
        account: PathId,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(allowed("account.debit")),
    ) -> dict[str, Any]:
        return await _move(account, body, request, who, "debit")

    @router.get("/accounts/{account}", response_model=AccountOut, responses=errors(*AUTH, 404, 422))
    def account(
        account: PathId,
        request: Request,
        who: Identity = Depends(allowed("account.read")),
    ) -> dict[str, Any]:
        found = account_view(get_runtime(request), account, owner=who.operator_id)
        return model_view(ReadModel("account", found), viewer_for(request, who))
