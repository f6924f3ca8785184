import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.corpus.selectors.corpus import word_diff
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, Role, Turn, Verdict
from tests.factories import HTMX, import_sweep, judge_version, label_turn

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture
def call():
    dataset = Dataset.objects.create(name="calls", blind_review=False)
    conversation = Conversation.objects.create(
        dataset=dataset, external_id="fr-call", language="fr-CA", metadata={"scenario": "Vol annulé"}
    )
    turns = [
        Turn(conversation=conversation, position=0, role="agent", text="Bonjour, Air Boréal."),
        Turn(conversation=conversation, position=1, role="user", text=f"Mon nom est {SCRIPT} et {IMG}"),
        Turn(
            conversation=conversation,
            position=2,
            role="agent",
            intended_text="Je répète : Z K 3.",
            text="Je répète : zulu kilo trois.",
        ),
        Turn(
            conversation=conversation,
            position=3,
            role="tool_call",
            text='{"record_locator": "ZK3"}',
            metadata={"tool": "find_booking"},
        ),
    ]
    Turn.objects.bulk_create(turns)
    turns = list(conversation.turns.order_by("position"))
    sweep = import_sweep(dataset)
    label_turn(turns[2], rating=1, verdict_rating=3, sweep=sweep, failure_modes=["spelled-code-letter-names"])
    label_turn(turns[0], rating=3, verdict_rating=3, sweep=sweep, excluded=True)
    version = judge_version("task_completion", level=Judge.Level.CONVERSATION)
    GoldLabel.objects.create(
        judge=version.judge, conversation=conversation, source=GoldLabel.Source.IMPORTED, passed=True
    )
    Verdict.objects.create(
        sweep=sweep,
        judge_version=version,
        conversation=conversation,
        tier=Verdict.Tier.IMPORTED,
        status=Verdict.Status.UNRESOLVED,
        raw_text="I am not sure.",
    )
    return conversation


def test_anonymous_is_sent_to_login(client, call):
    turn = call.turns.first()
    for url in (
        reverse("conversation_detail", args=[call.pk]),
        reverse("conversation_turn", args=[call.pk, turn.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_full_page_shows_turns_diff_tools_labels_and_verdicts(client, make_user, call):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("conversation_detail", args=[call.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("Bonjour, Air Boréal.") < html.index("Mon nom est") < html.index("zulu kilo trois.")
    # Said vs intended, with word-level marks.
    assert "<del>Z K 3.</del>" in html and "<ins>zulu kilo trois.</ins>" in html
    assert "said ≠ intended" in html
    # Tool calls are folded.
    assert '<details class="fold tool">' in html and "<code>find_booking</code>" in html
    assert "&quot;record_locator&quot;: &quot;ZK3&quot;" in html
    # Gold labels, verdicts, agreement and exclusion.
    assert "spelled-code-letter-names" in html
    assert 'conciseness<span class="muted">@t1</span>' in html
    assert "✗ differs from gold" in html
    assert "label--excluded" in html and ">excluded<" in html
    # Conversation-level labels and the unresolved verdict's raw answer at the top.
    assert html.index("Whole conversation") < html.index("Bonjour, Air Boréal.")
    assert "task_completion" in html and "Unresolved" in html and "I am not sure." in html


def test_transcript_text_is_escaped(client, make_user, call):
    client.force_login(make_user("ana", languages=["fr"]))
    for response in (
        client.get(reverse("conversation_detail", args=[call.pk])),
        client.get(reverse("conversation_turn", args=[call.pk, call.turns.get(position=1).pk]), **HTMX),
    ):
        html = response.content.decode()
        assert SCRIPT not in html and IMG not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_reviewer_of_other_languages_gets_403(client, make_user):
    dataset = Dataset.objects.create(name="ja-calls", blind_review=False)
    conversation = Conversation.objects.create(dataset=dataset, external_id="ja-1", language="ja")
    turn = Turn.objects.create(conversation=conversation, position=0, role="user", text="もしもし")
    client.force_login(make_user("ana", languages=["fr", "de"]))
    response = client.get(reverse("conversation_detail", args=[conversation.pk]))
    assert response.status_code == 403
    assert "もしもし" not in response.content.decode()
    fragment = client.get(reverse("conversation_turn", args=[conversation.pk, turn.pk]), **HTMX)
    assert fragment.status_code == 403


def test_missing_conversation_or_foreign_turn_is_404(client, make_user, call):
    other = Conversation.objects.create(dataset=call.dataset, external_id="other", language="fr")
    foreign = Turn.objects.create(conversation=other, position=0, role="user", text="ailleurs")
    client.force_login(make_user("lea", role=Role.LEAD))
    assert client.get(reverse("conversation_detail", args=[99999])).status_code == 404
    assert client.get(reverse("conversation_turn", args=[call.pk, foreign.pk]), **HTMX).status_code == 404


def test_turn_fragment_is_the_turn_partial(client, make_user, call):
    turn = call.turns.get(position=2)
    client.force_login(make_user("ana", languages=["fr-CA"]))
    response = client.get(reverse("conversation_turn", args=[call.pk, turn.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<article class="turn turn--agent" id="turn-{turn.pk}"')
    assert "<html" not in html and "Bonjour, Air Boréal." not in html
    assert "<ins>zulu kilo trois.</ins>" in html and "✗ differs from gold" in html
    assert "HX-Request" in response["Vary"]


def test_turn_url_without_htmx_goes_to_the_turn_in_its_conversation(client, make_user, call):
    turn = call.turns.get(position=2)
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("conversation_turn", args=[call.pk, turn.pk]))
    assert response.status_code == 302
    assert response.url == reverse("conversation_detail", args=[call.pk]) + f"#turn-{turn.pk}"


def test_pages_carry_the_content_security_policy(client, make_user, call):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("conversation_detail", args=[call.pk]))
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    html = response.content.decode()
    assert "<script>" not in html and " style=" not in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_conversation_page_runs_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries):
    dataset = Dataset.objects.create(name="long", blind_review=False)
    conversation = Conversation.objects.create(dataset=dataset, external_id="long-1", language="de")
    sweep = import_sweep(dataset)
    client.force_login(make_user("lea", role=Role.LEAD))
    counts = []
    for size in (5, 50):
        for position in range(conversation.turns.count(), size):
            turn = Turn.objects.create(
                conversation=conversation, position=position, role="agent", text="Gern.", intended_text="Gerne."
            )
            label_turn(turn, rating=3, verdict_rating=2, sweep=sweep)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse("conversation_detail", args=[conversation.pk]))
        assert response.content.decode().count('class="turn turn--agent"') == size
        counts.append(len(captured))
    assert counts[0] == counts[1]
    with django_assert_max_num_queries(counts[0]):
        client.get(reverse("conversation_detail", args=[conversation.pk]))


def test_word_diff_marks_words_and_cjk_characters():
    diff = word_diff("Votre vol part à 17 h 00.", "Votre vol part à dix-sept cent heures.")
    assert diff.intended == [("equal", "Votre vol part à "), ("delete", "17 h 00.")]
    assert diff.said == [("equal", "Votre vol part à "), ("insert", "dix-sept cent heures.")]
    japanese = word_diff("1泊28,000円", "いちはく28,000円")
    assert japanese.intended == [("delete", "1泊"), ("equal", "28,000円")]
    assert japanese.said == [("insert", "いちはく"), ("equal", "28,000円")]
