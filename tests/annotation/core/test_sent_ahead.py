"""annotation.core.sql.sent_ahead: a statement run ahead of the next one on the connection, in
its round trip when that one is ``execute``'s, on its own before an ORM query, and on
leaving when nothing ran; when it refuses, nothing behind it is done."""

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext

from annotation.core.sql import RefusedAhead, Statement, execute, hot_cursor, sent_ahead
from tests.factories import UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Refuses when told to, as the token's check does when the token no longer stands.
AHEAD = Statement("test_ahead_v1", "SELECT annotation_refuse_ahead() WHERE %(refuse)s", (("refuse", "boolean"),))
RENAME = Statement(
    "test_rename_v1",
    "UPDATE auth_user SET first_name = %(name)s WHERE id = %(user)s RETURNING id",
    (("name", "varchar"), ("user", "integer")),
)


def rename(user, name: str):
    with hot_cursor() as cursor:
        execute(cursor, RENAME, {"name": name, "user": user.pk})
        return cursor.fetchone()


def run(queries) -> list[dict]:
    """The captured queries but the PREPAREs (a statement's first use on a connection)."""
    return [query for query in queries if "PREPARE" not in query["sql"]]


def first_name(user) -> str:
    return get_user_model().objects.get(pk=user.pk).first_name


@pytest.fixture(params=[True, False], ids=["prepared", "plain"])
def prepared(request, settings):
    settings.DB_PREPARED_STATEMENTS = request.param
    return request.param


def test_it_travels_in_the_round_trip_of_the_next_statement(prepared):
    user = UserFactory()
    rename(user, "warm")  # prepares the statement
    with sent_ahead(AHEAD, {"refuse": False}), CaptureQueriesContext(connection) as sent:
        assert rename(user, "after the check") == (user.pk,)
    [sql] = [query["sql"] for query in run(sent.captured_queries)]
    ahead, behind = ("test_ahead_v1", "test_rename_v1") if prepared else ("annotation_refuse_ahead", "UPDATE")
    assert sql.index(ahead) < sql.index(behind)
    assert first_name(user) == "after the check"


def test_a_refusal_leaves_nothing_of_the_statement_behind_it(prepared):
    user = UserFactory(first_name="before")
    with pytest.raises(RefusedAhead), sent_ahead(AHEAD, {"refuse": True}):
        rename(user, "never")
    assert first_name(user) == "before"
    assert rename(user, "later") == (user.pk,)  # the connection goes on
    assert first_name(user) == "later"


def test_it_runs_once_then_the_statements_after_it_go_alone():
    user = UserFactory()
    with sent_ahead(AHEAD, {"refuse": False}), CaptureQueriesContext(connection) as sent:
        rename(user, "one")
        rename(user, "two")
    assert sum("test_ahead" in query["sql"] for query in run(sent.captured_queries)) == 1


def test_an_orm_query_runs_after_it_on_its_own_and_not_after_a_refusal():
    user = UserFactory(first_name="before")
    users = get_user_model().objects
    with sent_ahead(AHEAD, {"refuse": False}), CaptureQueriesContext(connection) as sent:
        users.filter(pk=user.pk).update(first_name="orm")
    assert ["test_ahead" in query["sql"] for query in run(sent.captured_queries)] == [True, False]
    with pytest.raises(RefusedAhead), sent_ahead(AHEAD, {"refuse": True}):
        users.filter(pk=user.pk).update(first_name="never")
    assert first_name(user) == "orm"


def test_inside_a_transaction_a_refusal_rolls_back_its_savepoint_only():
    user = UserFactory(first_name="before")
    # Prepared inside the savepoint that the refusal rolls back: PREPARE outlives it.
    fresh = Statement("test_ahead_in_transaction_v1", AHEAD.sql, AHEAD.params)
    with transaction.atomic():
        rename(user, "in the transaction")
        with pytest.raises(RefusedAhead), sent_ahead(fresh, {"refuse": True}):
            rename(user, "never")
        assert first_name(user) == "in the transaction"  # the transaction is usable
    assert first_name(user) == "in the transaction"
    with sent_ahead(fresh, {"refuse": False}):
        rename(user, "prepared before")
    assert first_name(user) == "prepared before"


def test_as_a_transactions_first_statement_it_travels_with_it_and_a_refusal_ends_the_block():
    user = UserFactory(first_name="before")
    rename(user, "before")  # prepares the statement
    with (
        CaptureQueriesContext(connection) as sent,
        pytest.raises(RefusedAhead),
        transaction.atomic(),
        sent_ahead(AHEAD, {"refuse": True}),
    ):
        rename(user, "never")
    sql = [query["sql"] for query in run(sent.captured_queries)]
    assert [each.split()[0] for each in sql] == ["BEGIN", "EXECUTE", "ROLLBACK"]
    assert sql[1].index("test_ahead_v1") < sql[1].index("test_rename_v1")
    assert first_name(user) == "before"


def test_a_statement_that_fails_before_it_is_sent_leaves_it_ahead_of_the_next():
    user = UserFactory(first_name="before")
    broken = Statement("test_broken_v1", "SELECT no_such_column FROM auth_user", ())
    with pytest.raises(RefusedAhead), sent_ahead(AHEAD, {"refuse": True}):
        with pytest.raises(DatabaseError), hot_cursor() as cursor:
            execute(cursor, broken, {})  # its PREPARE fails: nothing was sent with it
        rename(user, "never")
    assert first_name(user) == "before"


def test_it_leaves_the_rating_cycle_on_the_drivers_cursor():
    """Its execute wrapper does not send ``hot_cursor`` to Django's slower cursor."""
    with sent_ahead(AHEAD, {"refuse": False}), hot_cursor() as cursor:
        assert not isinstance(cursor, CursorWrapper)
        execute(cursor, AHEAD, {"refuse": False})


def test_when_nothing_ran_it_runs_on_leaving_and_not_after_an_exception():
    with pytest.raises(RefusedAhead), sent_ahead(AHEAD, {"refuse": True}):
        pass
    with CaptureQueriesContext(connection) as left, pytest.raises(ValueError), sent_ahead(AHEAD, {"refuse": True}):
        raise ValueError("the block's own error")
    assert left.captured_queries == []


def test_nothing_is_sent_ahead_after_the_block():
    user = UserFactory()
    with sent_ahead(AHEAD, {"refuse": False}):
        rename(user, "inside")
    with CaptureQueriesContext(connection) as after:
        rename(user, "after")
    assert not any("test_ahead" in query["sql"] for query in after.captured_queries)
    assert connection.execute_wrappers == []
