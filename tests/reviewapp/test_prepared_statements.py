"""On PostgreSQL the hot paths' fixed statements are prepared on the connection (`rows.prepared_cursor`):
parsed and planned once per connection, then executed with server-bound parameters. They keep answering
after the connection is dropped and after a schema change, and nothing is prepared with the setting off."""

import pytest
from django.db import connection
from django.test import override_settings

from reviewapp.review.selectors import screen_sql
from tests.factories import make_item

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")

ITEM_READ = 'SELECT ri."id"'


def prepared() -> dict[str, tuple[int, int]]:
    """The connection's prepared statements that read an item: SQL -> (generic plans, custom plans)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return {sql: (generic, custom) for sql, generic, custom in cursor.fetchall() if ITEM_READ in sql}


@pytest.fixture(autouse=True)
def deallocated(db):
    """No statement prepared by an earlier test on the shared connection. psycopg sees the DEALLOCATE ALL
    and forgets its own record of them, as after a pooler's or an operator's."""
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")


@pytest.mark.django_db
def test_the_item_read_is_prepared_once_and_then_planned_generically(make_user):
    items = [make_item("fr", priority=k) for k in range(8)]
    ana = make_user("ana", languages=["fr"])
    for item in items:
        assert screen_sql.item_row(item_id=item.pk, user=ana).pk == item.pk
    ((generic, custom),) = prepared().values()
    # PostgreSQL plans the first five executions for their parameters, then keeps one plan for all.
    assert (generic, custom) == (3, 5)


@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_prepares_again(make_user):
    item = make_item("fr")
    ana = make_user("ana", languages=["fr"])
    screen_sql.item_row(item_id=item.pk, user=ana)
    assert len(prepared()) == 1
    connection.close()
    assert prepared() == {}
    assert screen_sql.item_row(item_id=item.pk, user=ana).pk == item.pk
    assert len(prepared()) == 1


@pytest.mark.django_db(transaction=True)
def test_a_schema_change_replans_the_prepared_statement(make_user):
    """As a migration on a live server: PostgreSQL invalidates the plans of the tables it altered."""
    item = make_item("fr", priority=7)
    ana = make_user("ana", languages=["fr"])
    for _ in range(7):
        screen_sql.item_row(item_id=item.pk, user=ana)
    with connection.cursor() as cursor:
        cursor.execute('ALTER TABLE "reviewapp_reviewitem" ADD COLUMN "added_later" integer')
    try:
        read = screen_sql.item_row(item_id=item.pk, user=ana)
        assert (read.pk, read.priority) == (item.pk, 7)
    finally:
        with connection.cursor() as cursor:
            cursor.execute('ALTER TABLE "reviewapp_reviewitem" DROP COLUMN "added_later"')
    read = screen_sql.item_row(item_id=item.pk, user=ana)
    assert (read.pk, read.priority) == (item.pk, 7)


@pytest.mark.django_db
def test_with_the_setting_off_nothing_is_prepared(make_user):
    item = make_item("fr")
    ana = make_user("ana", languages=["fr"])
    with override_settings(DATABASE_PREPARED_STATEMENTS=False):
        for _ in range(7):
            assert screen_sql.item_row(item_id=item.pk, user=ana).pk == item.pk
    assert prepared() == {}
