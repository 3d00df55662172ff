"""References between the bet tables and their parents, checked by triggers.

A declared foreign key is checked row by row; on PostgreSQL that is a query through the
SPI per inserted row, and for the 10,000 rows of a batch of 5,000 bets it cost two thirds
of the server's time for the batch (measured: 2.46 s of server CPU per 50k bets with the
keys, 0.81 s without). Here the same rule — no bet or ledger entry names an account or a
round that does not exist, and no account or round that is named goes away or changes
its key — is checked once per statement on PostgreSQL (one anti-join over the
statement's new rows, a transition table) and per row on SQLite (where a trigger costs no
more than the key did).

What a declared key also did and these do not: take a share lock on the parent row
until commit. Every writer of these tables holds the log's write lock (the advisory lock
on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) and nothing in the product deletes an
account or a round, so no concurrent transaction can remove a parent between the check
and the commit.
"""

from __future__ import annotations

from alembic import op

# child table -> (column, parent table, parent key)
REFERENCES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "placed_bets": (("account_id", "accounts", "account_id"), ("round_id", "rounds", "round_id")),
    "ledger_entries": (("account_id", "accounts", "account_id"),),
}


def _parents() -> dict[str, list[tuple[str, str, str]]]:
    """parent table -> [(parent key, child table, child column)]"""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for child, refs in REFERENCES.items():
        for column, parent, key in refs:
            out.setdefault(parent, []).append((key, child, column))
    return out


def create_reference_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _create_postgresql()
    else:
        _create_sqlite()


def drop_reference_triggers() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for child in REFERENCES:
        if postgresql:
            op.execute(f"DROP TRIGGER IF EXISTS {child}_references ON {child}")
            op.execute(f"DROP FUNCTION IF EXISTS livetable_{child}_references()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {child}_references")
    for parent in _parents():
        if postgresql:
            op.execute(f"DROP TRIGGER IF EXISTS {parent}_referenced ON {parent}")
            op.execute(f"DROP FUNCTION IF EXISTS livetable_{parent}_referenced()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {parent}_referenced_delete")
            op.execute(f"DROP TRIGGER IF EXISTS {parent}_referenced_update")


def create_reference_checks(*, distinct: bool) -> None:
    """(Re)define the PostgreSQL functions that check a statement's new rows.

    ``distinct`` (0008 on): each distinct parent key the statement names is looked up once,
    not once per row: a batch of 5,000 bets names one round and as many accounts as it has
    players, so the check of ``placed_bets.round_id`` made 5,000 index probes of ``rounds``
    for one key (0006 made the row-wise form; 0008 replaces it, and its downgrade puts it
    back). The rule is the same: any new row whose parent is missing fails the statement.
    """
    for child, refs in REFERENCES.items():
        checks = "\n".join(
            "    IF EXISTS (SELECT 1 FROM "
            + (f"(SELECT DISTINCT {column} FROM new_rows)" if distinct else "new_rows")
            + " AS n WHERE NOT EXISTS"
            f" (SELECT 1 FROM {parent} AS p WHERE p.{key} = n.{column})) THEN\n"
            f"        RAISE EXCEPTION '{child}.{column}: no such {parent}.{key}'"
            f" USING ERRCODE = 'foreign_key_violation';\n"
            f"    END IF;"
            for column, parent, key in refs
        )
        op.execute(
            f"CREATE OR REPLACE FUNCTION livetable_{child}_references() RETURNS trigger AS $$\n"
            f"BEGIN\n{checks}\n    RETURN NULL;\nEND;\n$$ LANGUAGE plpgsql"
        )


def _create_postgresql() -> None:
    create_reference_checks(distinct=False)
    for child in REFERENCES:
        op.execute(
            f"CREATE TRIGGER {child}_references AFTER INSERT ON {child}"
            " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
            f" EXECUTE FUNCTION livetable_{child}_references()"
        )
    for parent, children in _parents().items():
        key = children[0][0]
        used = " OR ".join(
            f"EXISTS (SELECT 1 FROM {child} WHERE {column} = OLD.{key})"
            for _, child, column in children
        )
        op.execute(
            f"CREATE OR REPLACE FUNCTION livetable_{parent}_referenced() RETURNS trigger AS $$\n"
            "BEGIN\n"
            f"    IF (TG_OP = 'DELETE' OR NEW.{key} IS DISTINCT FROM OLD.{key}) AND ({used}) THEN\n"
            f"        RAISE EXCEPTION '{parent} %: still referenced', OLD.{key}"
            " USING ERRCODE = 'foreign_key_violation';\n"
            "    END IF;\n"
            "    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;\n"
            "END;\n$$ LANGUAGE plpgsql"
        )
        op.execute(
            f"CREATE TRIGGER {parent}_referenced BEFORE DELETE OR UPDATE OF {key} ON {parent}"
            f" FOR EACH ROW EXECUTE FUNCTION livetable_{parent}_referenced()"
        )


def _create_sqlite() -> None:
    for child, refs in REFERENCES.items():
        missing = " OR ".join(
            f"NOT EXISTS (SELECT 1 FROM {parent} WHERE {key} = NEW.{column})"
            for column, parent, key in refs
        )
        op.execute(
            f"CREATE TRIGGER {child}_references BEFORE INSERT ON {child} WHEN {missing}\n"
            f"BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: {child}'); END"
        )
    for parent, children in _parents().items():
        key = children[0][0]
        used = " OR ".join(
            f"EXISTS (SELECT 1 FROM {child} WHERE {column} = OLD.{key})"
            for _, child, column in children
        )
        op.execute(
            f"CREATE TRIGGER {parent}_referenced_delete BEFORE DELETE ON {parent} WHEN {used}\n"
            f"BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: {parent}'); END"
        )
        op.execute(
            f"CREATE TRIGGER {parent}_referenced_update BEFORE UPDATE OF {key} ON {parent}"
            f" WHEN NEW.{key} IS NOT OLD.{key} AND ({used})\n"
            f"BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: {parent}'); END"
        )
