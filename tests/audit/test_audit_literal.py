"""The parameters of a script sent in one round trip (``audit.store._literal``) are bound
as literals exactly as psycopg's own ``mogrify`` binds them, character for character, for
every text (quotes, backslashes, any character), integer, boolean and NULL; anything else
(another type, a NUL, another ``%`` marker) is left to psycopg, which binds or refuses it
as before. And what is bound reads back from the server as the values given."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.db import create_db_engine
from audit.store import _bound, _literal

VALUES = st.one_of(
    st.text(),
    st.text(alphabet="'\\%s\"E \n"),  # what quoting is about
    st.integers(),
    st.booleans(),
    st.none(),
)


def _mogrified(raw: Any, sql: str, params: list[Any]) -> str | type[Exception]:
    try:
        return psycopg.ClientCursor(raw).mogrify(sql, params)
    except psycopg.Error as exc:
        return type(exc)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_bound_as_psycopg_binds_and_read_back_as_given(db_url: str) -> None:
    engine = create_db_engine(db_url)
    raw = engine.raw_connection()
    try:
        driver = raw.dbapi_connection
        assert driver is not None

        @settings(max_examples=400, deadline=None)
        @given(st.lists(VALUES, max_size=6))
        def check(params: list[Any]) -> None:
            sql = "SELECT " + ", ".join(["%s"] * len(params)) + " AS v" if params else "SELECT 1"
            expected = _mogrified(driver, sql, params)
            if not isinstance(expected, str):  # refused by psycopg: refused the same way
                with pytest.raises(expected):
                    _literal(driver, [(sql, params)])
                return
            (statement,) = _literal(driver, [(sql, params)])
            assert statement == expected
            if params:
                # as the server reads it: each value as given
                row = driver.execute(statement.replace(" AS v", ""), prepare=False).fetchone()
                driver.rollback()
                assert row is not None
                for got, want in zip(row, params, strict=True):
                    assert got == want if not isinstance(want, bool) else got is want

        check()
    finally:
        raw.close()
        engine.dispose()


def test_what_it_does_not_bind_is_left_to_psycopg() -> None:
    assert _bound("x = %s", ["a\x00b"]) is None  # psycopg refuses it
    assert _bound("x = %s", [1.5]) is None
    assert _bound("x = %s", [datetime(2026, 1, 1, tzinfo=UTC)]) is None
    assert _bound("x = %s AND y LIKE 'a%%'", [1]) is None
    assert _bound("x = %(n)s", [1]) is None
    assert _bound("x = %s, %s", [1]) is None  # a count that differs
    assert _bound("x = %s", [True]) == "x = true"
    assert _bound("x = %s", [-3]) == "x =  -3"
    assert _bound("x = %s", ["it's \\n"]) == "x =  E'it''s \\\\n'"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_statement_it_cannot_bind_goes_through_psycopg(db_url: str) -> None:
    engine = create_db_engine(db_url)
    raw = engine.raw_connection()
    try:
        driver: Any = raw.dbapi_connection
        when = datetime(2026, 12, 6, 20, 0, tzinfo=UTC)
        got = _literal(driver, [("x = %s", [1]), ("y = %s", [when]), ("z = %s", [1.5])])
        assert got == [
            "x = 1",
            psycopg.ClientCursor(driver).mogrify("y = %s", [when]),
            psycopg.ClientCursor(driver).mogrify("z = %s", [1.5]),
        ]
        with pytest.raises(psycopg.DataError):
            _literal(driver, [("x = %s", ["a\x00b"])])
    finally:
        raw.close()
        engine.dispose()
