"""`reviewapp.rows`: instances read by hand-written SQL are the ORM's own, whichever way they are built."""

import pytest
from django.db import connection
from django.db.models import signals
from django.db.models.fields.files import FieldFile

from reviewapp.models import Conversation, ReviewItem, Turn
from reviewapp.rows import Columns, Rows, run_sql
from reviewapp.triage.selectors.queue_sql import ShownColumns
from tests import factories

pytestmark = pytest.mark.django_db


def _read(rows: Rows, table: str, alias: str, pk: int):
    quote = connection.ops.quote_name
    found = run_sql(f"SELECT {rows.select()} FROM {quote(table)} {alias} WHERE {alias}.id = %s", [pk])  # noqa: S608
    return rows.instances(found[0])


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


@pytest.fixture
def item():
    judge = factories.judge()
    turn = factories.agent_turns("calls", 1)[0]
    turn.metadata = {"speaker": "agent", "nested": [1, 2.5, None]}
    turn.entities = [{"kind": "code", "text": "A-12"}]
    turn.save()
    return factories.item(judge, turn, reasons=["gold_disagrees", "unresolved"], priority=7)


def test_instances_equal_the_orms_in_every_column_and_state(item):
    rows = Rows(Columns(ReviewItem, "ri"))
    [read] = _read(rows, ReviewItem._meta.db_table, "ri", item.pk)
    orm = ReviewItem.objects.get(pk=item.pk)
    assert type(read) is ReviewItem
    assert _values(read) == _values(orm)
    assert read.reasons == ["gold_disagrees", "unresolved"]  # JSON decoded by the field's converters
    assert read._state.adding is False and read._state.db == "default"
    assert read.get_deferred_fields() == set()
    assert read.get_status_display() == orm.get_status_display()
    assert read.turn == item.turn  # a foreign key loads its object on access


def test_json_columns_decoded_and_an_instance_saves_as_an_update(item):
    rows = Rows(Columns(Turn, "t"))
    [turn] = _read(rows, Turn._meta.db_table, "t", item.turn_id)
    assert turn.metadata == {"speaker": "agent", "nested": [1, 2.5, None]}
    assert turn.entities == [{"kind": "code", "text": "A-12"}]
    turn.text = "Changed."
    turn.save()  # an UPDATE of the row read, not an INSERT (which the unique position would refuse)
    assert Turn.objects.filter(conversation=turn.conversation_id).count() == 1
    assert Turn.objects.get(pk=turn.pk).text == "Changed."


def test_columns_not_read_are_deferred_and_load_on_access(item):
    rows = Rows(ShownColumns(Turn, "t", names=("id", "conversation", "position", "text")))
    [turn] = _read(rows, Turn._meta.db_table, "t", item.turn_id)
    assert turn.get_deferred_fields() == {
        "role",
        "intended_text",
        "audio_start_ms",
        "audio_end_ms",
        "entities",
        "metadata",
    }
    assert "metadata" not in vars(turn)
    assert turn.metadata == {"speaker": "agent", "nested": [1, 2.5, None]}  # one query, as a deferred field


def test_a_model_with_a_post_init_receiver_is_built_by_from_db(item):
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    signals.post_init.connect(receiver, sender=Turn)
    try:
        rows = Rows(Columns(Turn, "t"))  # shapes are worked out on first use, after the receiver is there
        [turn] = _read(rows, Turn._meta.db_table, "t", item.turn_id)
    finally:
        signals.post_init.disconnect(receiver, sender=Turn)
    assert seen == [turn.pk]


def test_a_field_with_a_descriptor_of_its_own_is_built_by_from_db(item):
    conversation = item.conversation
    conversation.audio.name = "audio/call.wav"
    conversation.save()
    rows = Rows(Columns(Conversation, "c"))
    [read] = _read(rows, Conversation._meta.db_table, "c", conversation.pk)
    assert isinstance(read.audio, FieldFile)  # the file field's descriptor wrapped the stored name
    assert read.audio.name == "audio/call.wav"
    assert read.audio.instance is read


def test_plain_models_skip_model_init_and_the_others_go_through_it(item, monkeypatch):
    """The reason for the plain build: `Model.__init__` walks every field; the queue page builds some
    two hundred instances per request."""
    from django.db.models import Model

    built = []
    original = Model.__init__

    def counting(self, *args, **kwargs):
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Model, "__init__", counting)
    rows = Rows(Columns(ReviewItem, "ri"), Columns(Conversation, "c"))
    quote = connection.ops.quote_name
    found = run_sql(
        f"SELECT {rows.select()} FROM {quote(ReviewItem._meta.db_table)} ri"  # noqa: S608
        f" JOIN {quote(Conversation._meta.db_table)} c ON c.id = ri.conversation_id WHERE ri.id = %s",
        [item.pk],
    )
    read, conversation = rows.instances(found[0])
    assert built == ["Conversation"]  # its audio is a file field: from_db
    assert _values(read) == _values(ReviewItem.objects.get(pk=item.pk))
    assert conversation.external_id == item.conversation.external_id
