"""Who may act: one table of who may issue each command and call each route.

Every command carries its principal, and :func:`may` is asked before ``decide`` with the
table's state and the owners of the accounts the command names (read in the command's
own transaction, under the table's lock). Every route is named in :data:`ROUTES` and its
dependency asks :func:`permit` before the handler runs. Nothing else decides who may do
what: a route authenticates (is this a known principal?), parses, and asks here.

What it knows:

- the role: dealers deal their table's procedure, supervisors approve and correct,
  operators act for their players, regulators read, admins administer principals;
- the table binding: a principal bound to a table acts on that table only;
- ownership: an operator owns the accounts it funded (``Account.owner``, its actor
  string); a seat holds one account; a bet, a bet behind included, belongs to its
  account; a seated banker is the account of the round's ``bank`` bet;
- the house: a house-banked table's banker has no discretion (it plays the published
  policy, which the game enforces); its moves are confirmed by the table's staff, never
  by an operator.

A refusal is a :class:`Refusal` (a stable code, a 403 or 404 status, a reason), raised
as a typed problem before anything is written. An account that is not the caller's is
answered as unknown (404), the same as one that does not exist, so nothing is revealed
about another operator's players.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Final

from table_service.errors import Forbidden, NotFound, Refused
from table_service.principals import Identity, Internal, Principal, Role
from table_service.table import commands as c
from table_service.table.state import TableState

DEALER, SUPERVISOR, REGULATOR = Role.DEALER, Role.SUPERVISOR, Role.REGULATOR
OPERATOR, ADMIN = Role.OPERATOR, Role.ADMIN
ANYONE: Final = frozenset(Role)
BANKER = "banker"
BANK_BET = "bank"


@dataclass(frozen=True)
class Allowed:
    """The principal may issue the command (the game may still refuse it)."""


ALLOWED: Final = Allowed()


@dataclass(frozen=True)
class Refusal:
    """Why not: a stable ``code``, the HTTP ``status`` (403 or 404), a reason for people."""

    code: str
    status: int
    reason: str

    def error(self) -> Refused:
        """The typed problem a caller raises (nothing has been written yet)."""
        cls = NotFound if self.status == 404 else Forbidden
        exc = cls(self.reason)
        exc.code = self.code
        return exc


Verdict = Allowed | Refusal


@dataclass(frozen=True)
class Rule:
    """Who may call a route: ``roles``; ``bound``: a principal bound to a table may use it
    for that table only (the route names the table in its path)."""

    roles: frozenset[Role]
    bound: bool = True


def _rule(*roles: Role, bound: bool = True) -> Rule:
    return Rule(frozenset(roles), bound)


# -- the table: commands ------------------------------------------------------------------
# Who may issue each table command. Internal principals (the service's own timers, restart,
# configuration) may issue any; a reader only what it reads (READER_COMMANDS).
COMMANDS: Final[Mapping[type, frozenset[Role]]] = {
    c.OpenTable: frozenset(),  # the configuration, at start
    c.ReviewRoom: frozenset(),  # the table itself, after a round's money moved
    c.TurnTimeout: frozenset(),  # the decision clock
    c.ReaderFault: frozenset(),  # the reader
    c.ReaderOnline: frozenset(),  # the reader
    c.InsertShoe: frozenset({SUPERVISOR}),
    c.ChangeShoe: frozenset({SUPERVISOR}),
    c.CardScanned: frozenset({SUPERVISOR}),  # keyboard entry while the reader is down
    c.CutCard: frozenset({SUPERVISOR}),
    c.ResolveIncident: frozenset({SUPERVISOR}),
    c.VoidRound: frozenset({SUPERVISOR}),
    c.OpenBetting: frozenset({DEALER, SUPERVISOR}),
    c.CloseBetting: frozenset({DEALER, SUPERVISOR}),
    c.RaiseIncident: frozenset({DEALER, SUPERVISOR}),
    c.PlaceBets: frozenset({OPERATOR}),
    c.TakeSeat: frozenset({OPERATOR}),
    c.LeaveSeat: frozenset({OPERATOR}),
    c.PlayerDisconnected: frozenset({OPERATOR}),
    # a player's decision: its operator; the house banker's published move: the staff
    c.Act: frozenset({OPERATOR, DEALER, SUPERVISOR}),
}
READER_COMMANDS: Final = frozenset(
    {c.CardScanned, c.CutCard, c.ReaderFault, c.ReaderOnline, c.RaiseIncident}
)

# -- the table: routes that are not table commands ---------------------------------------------
# Every route of the API and every WebSocket route has an entry (the authorization matrix
# test fails on one without). ``None``: public (no token needed).
ROUTES: Final[Mapping[str, Rule | None]] = {
    # foundation
    "health": None,
    "whoami": _rule(*ANYONE),
    "principals.list": _rule(ADMIN),
    "principals.add": _rule(ADMIN),
    "principals.revoke": _rule(ADMIN),
    "audit.events": _rule(REGULATOR, SUPERVISOR, ADMIN),
    "audit.checkpoint": _rule(SUPERVISOR, ADMIN),
    "tlog.read": _rule(
        REGULATOR, SUPERVISOR, ADMIN
    ),  # public when the studio publishes its log (tlog_public)
    "tlog.cosign": _rule(REGULATOR, ADMIN),
    # tables
    "tables.list": _rule(*ANYONE),  # a bound principal sees its own table only
    "table.read": _rule(*ANYONE),
    "rounds.read": _rule(
        REGULATOR, SUPERVISOR, OPERATOR, ADMIN
    ),  # an operator: its own accounts' bets only
    "incidents.read": _rule(SUPERVISOR, REGULATOR, DEALER, ADMIN),
    "table.stream": _rule(*ANYONE),  # an operator: its own accounts only
    "table.public_stream": None,
    # money: an operator's own accounts only (another's is unknown to it)
    "account.credit": _rule(OPERATOR),
    "account.debit": _rule(OPERATOR),
    "account.read": _rule(OPERATOR, REGULATOR, SUPERVISOR, ADMIN),
    # consoles
    "console.time": None,
    "console.public_view": None,
    "console.roads": None,
    "console.view": _rule(DEALER, SUPERVISOR, REGULATOR, ADMIN),
    "console.overview": _rule(SUPERVISOR, REGULATOR, ADMIN),
    "void.request": _rule(SUPERVISOR),
    "void.approve": _rule(SUPERVISOR),
    "duty.sign_in": _rule(DEALER),
    "recall.read": _rule(REGULATOR, SUPERVISOR, ADMIN),
    # by round id, table and time; by account: a regulator, or the account's own operator
    "recall.search": _rule(REGULATOR, SUPERVISOR, ADMIN, OPERATOR),
    "console.timeline": _rule(SUPERVISOR, REGULATOR, ADMIN),
    # the house banker's published move from the dealer console (the command it issues is
    # asked again as an Act: an operator never moves the house banker)
    "house.move": _rule(DEALER, SUPERVISOR),
    "studio.tables": _rule(*ANYONE),
}


def _binding(who: Principal, table_id: str | None) -> Refusal | None:
    if table_id is not None and who.table_id is not None and who.table_id != table_id:
        return Refusal(
            "other_table", 403, f"{_name(who)} is bound to table {who.table_id}, not {table_id}"
        )
    return None


def _name(who: Principal) -> str:
    return who.name if isinstance(who, Identity) else who.actor


def _role_refusal(who: Identity, allowed: Collection[Role], what: str) -> Refusal:
    names = ", ".join(sorted(r.value for r in allowed)) or "the service itself"
    return Refusal("wrong_role", 403, f"role {who.role.value} may not {what} ({names} may)")


def permit(who: Principal, route: str, table_id: str | None = None) -> Verdict:
    """May ``who`` call ``route`` (on ``table_id``, when the route names a table)?"""
    rule = ROUTES[route]
    if rule is None:
        return ALLOWED
    if isinstance(who, Internal):
        return ALLOWED if who.kind == "system" else _internal_refusal(who, route)
    if who.role not in rule.roles:
        return _role_refusal(who, rule.roles, route)
    if rule.bound:
        return _binding(who, table_id) or ALLOWED
    return ALLOWED


def permit_command(who: Principal, kind: type, table_id: str | None) -> Verdict:
    """The part of :func:`may` that needs neither state nor owners (role and binding):
    asked by a route before it parses further, so a wrong role is a 403 at once."""
    if isinstance(who, Internal):
        if who.kind == "system" or kind in READER_COMMANDS:
            return _binding(who, table_id) or ALLOWED
        return _internal_refusal(who, kind.__name__)
    roles = COMMANDS[kind]
    if who.role not in roles:
        return _role_refusal(who, roles, _command_name(kind))
    return _binding(who, table_id) or ALLOWED


def _internal_refusal(who: Internal, what: str) -> Refusal:
    return Refusal("wrong_role", 403, f"{who.actor} may not {what}")


def _command_name(kind: type) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in kind.__name__).lstrip("_")


def accounts_named(command: c.Command, state: TableState) -> set[str]:
    """The accounts whose owners :func:`may` needs for ``command`` (read by the caller in
    one statement, in the command's transaction)."""
    match command:
        case c.PlaceBets(bets=bets):
            return {b.account for b in bets}
        case c.TakeSeat(account=account):
            return {account}
        case c.LeaveSeat(seat=seat) | c.PlayerDisconnected(seat=seat):
            holder = state.seats.get(seat)
            return {holder.account} if holder is not None else set()
        case c.Act():
            found = {command.account} if command.account else set()
            answering = _actor_account(state, command.actor)
            if isinstance(answering, str):
                found.add(answering)
            return found
    return set()


def may(
    who: Principal,
    command: c.Command,
    state: TableState,
    owners: Mapping[str, str | None],
) -> Verdict:
    """May ``who`` issue ``command`` at the table in ``state``?

    ``owners``: account → owning operator for the accounts :func:`accounts_named` lists
    (an account missing from it does not exist). The game's own legality (the phase, the
    turn, the stake) is ``decide``'s to refuse, after this."""
    first = permit_command(who, type(command), state.table_id)
    if isinstance(first, Refusal) or isinstance(who, Internal):
        return first
    mine = who.operator_id

    def owned(account: str) -> bool:
        return mine is not None and owners.get(account) == mine

    match command:
        case c.PlaceBets(bets=bets):
            foreign = sorted({b.key for b in bets if not owned(b.account)})
            if foreign:
                refusal = unknown_account(next(b.account for b in bets if not owned(b.account)))
                return Refusal(
                    refusal.code, 404, f"{refusal.reason} (bets {', '.join(foreign[:20])})"
                )
        case c.TakeSeat(account=account):
            if not owned(account):
                return unknown_account(account)
        case c.LeaveSeat(seat=seat) | c.PlayerDisconnected(seat=seat):
            holder = state.seats.get(seat)
            if holder is not None and not owned(holder.account):
                return Refusal(
                    "foreign_player", 403, f"the player at seat {seat} is not one of yours"
                )
        case c.Act():
            return _may_act(who, command, state, owned)
    return ALLOWED


def _actor_account(state: TableState, actor: str) -> str | Refusal | None:
    """The account that answers for ``actor`` at the table now: a seat's holder, a bet's
    account, the seated banker's; None for the house banker; a refusal for nobody."""
    kind, _, who = actor.partition(":")
    rnd = state.round
    if kind == "seat" and who.isdigit() and who.isascii():
        holder = state.seats.get(int(who))
        if holder is None:
            return Refusal("wrong_player", 403, f"nobody sits at seat {who}")
        return holder.account
    if kind == "behind" and who:
        bet = rnd.bets.get(who) if rnd is not None else None
        if bet is None:
            return Refusal("wrong_player", 403, f"no bet {who} in this round")
        return bet.account
    if actor == BANKER:
        bank = next(
            (
                b
                for b in (rnd.bets.values() if rnd is not None else ())
                if b.bet_type == BANK_BET and b.parent is None
            ),
            None,
        )
        return bank.account if bank is not None else None
    return Refusal("wrong_player", 403, f"no player for {actor}")


def _may_act(
    who: Identity, command: c.Act, state: TableState, owned: Callable[[str], bool]
) -> Verdict:
    account = _actor_account(state, command.actor)
    if isinstance(account, Refusal):
        return account
    if account is None:  # the house banker: its published move, confirmed by the staff
        if who.role is OPERATOR:
            return Refusal(
                "house_banker",
                403,
                "the house banks at this table: its moves follow the published policy and "
                "are confirmed by the table's dealer, never by an operator",
            )
        if command.account not in (None, BANKER):
            return Refusal("wrong_player", 403, f"{command.account} is not the house")
        return ALLOWED
    if who.role is not OPERATOR:
        return Refusal(
            "wrong_role", 403, f"{command.actor}'s decisions come from the player's operator"
        )
    if not owned(account):
        return Refusal("foreign_player", 403, f"{command.actor} is not one of your players")
    if command.account and command.account != account:
        return Refusal("wrong_player", 403, f"{command.account} does not play {command.actor}")
    return ALLOWED


def unknown_account(account: str) -> Refusal:
    """Another operator's account and one that does not exist get the same answer."""
    return Refusal("unknown_account", 404, f"no account {account!r}")


def may_fund(operator_id: str, account: str, owner: str | None) -> Verdict:
    """An operator moves money on its own accounts, or funds a new one (the first operator
    to fund an account owns it, for good). Another's account is unknown to it."""
    if owner is not None and owner != operator_id:
        return unknown_account(account)
    return ALLOWED


def may_read_account(operator_id: str | None, account: str, owner: str | None) -> Verdict:
    """Staff who may read accounts read any; an operator only its own (another's, or one
    that does not exist, is unknown to it)."""
    if operator_id is not None and owner != operator_id:
        return unknown_account(account)
    return ALLOWED


def may_search_rounds(who: Identity, account: str | None, owner: str | None) -> Verdict:
    """Rounds found by account name that account's bets: a regulator, or the operator that
    owns it (another's, or none, is unknown to it); an operator searches only that way."""
    if account is None:
        if who.role is OPERATOR:
            return Refusal("wrong_role", 403, "an operator finds rounds by an account of its own")
        return ALLOWED
    if who.role is REGULATOR:
        return ALLOWED
    if who.role is OPERATOR:
        return ALLOWED if owner == who.operator_id else unknown_account(account)
    return Refusal(
        "wrong_role", 403, "a search by account is for a regulator or the owning operator"
    )


def check(verdict: Verdict) -> None:
    """Raise the refusal's typed problem (a no-op when allowed)."""
    if isinstance(verdict, Refusal):
        raise verdict.error()
