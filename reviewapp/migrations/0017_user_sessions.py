"""Sessions keep the id of the user they sign in, so a request reads its session and its user in one
statement (reviewapp.people.sessions). The live sessions move over with the user their data names, so
nobody is signed out by the change; going back moves them back."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

BATCH = 1000


def _signed_in_id(store, data: str, user_ids: set[int]) -> int | None:
    value = store.decode(data).get("_auth_user_id")  # {} for data signed with another secret
    try:
        user_id = int(value)
    except (TypeError, ValueError):
        return None
    return user_id if user_id in user_ids else None


def sessions_forward(apps, schema_editor):
    from django.contrib.sessions.backends.db import SessionStore

    Session, UserSession = apps.get_model("sessions", "Session"), apps.get_model("reviewapp", "UserSession")
    user_ids = set(apps.get_model(*settings.AUTH_USER_MODEL.split(".")).objects.values_list("id", flat=True))
    store, batch = SessionStore(), []
    for old in Session.objects.filter(expire_date__gt=timezone.now()).iterator(chunk_size=BATCH):
        user_id = _signed_in_id(store, old.session_data, user_ids)
        batch.append(UserSession(old.session_key, old.session_data, old.expire_date, user_id))
        if len(batch) == BATCH:
            UserSession.objects.bulk_create(batch)
            batch = []
    UserSession.objects.bulk_create(batch)
    Session.objects.all().delete()


def sessions_backward(apps, schema_editor):
    Session, UserSession = apps.get_model("sessions", "Session"), apps.get_model("reviewapp", "UserSession")
    batch = []
    for new in UserSession.objects.filter(expire_date__gt=timezone.now()).iterator(chunk_size=BATCH):
        batch.append(Session(new.session_key, new.session_data, new.expire_date))
        if len(batch) == BATCH:
            Session.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    Session.objects.bulk_create(batch, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0016_small_indexes_sqlite_reason_indexes"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="UserSession",
            fields=[
                (
                    "session_key",
                    models.CharField(max_length=40, primary_key=True, serialize=False, verbose_name="session key"),
                ),
                ("session_data", models.TextField(verbose_name="session data")),
                ("expire_date", models.DateTimeField(db_index=True, verbose_name="expire date")),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "session",
                "verbose_name_plural": "sessions",
                "db_table": "reviewapp_session",
                "abstract": False,
            },
        ),
        migrations.RunPython(sessions_forward, sessions_backward, elidable=True),
    ]
