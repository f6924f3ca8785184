import pytest
from django.urls import reverse

from reviewapp.judging.services.signatures import signature_create
from reviewapp.models import Conversation, Dataset, GoldLabel, Signature, Turn
from tests.factories import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn():
    dataset = Dataset.objects.create(name="run-en")
    conv = Conversation.objects.create(dataset=dataset, external_id="call-7", language="en")
    return Turn.objects.create(conversation=conv, position=2, role="agent", text="No, I can't do that <b>now</b>.")


@pytest.fixture
def signature(judge, turn):
    sig = signature_create(
        judge=judge,
        language="en",
        intent="decline",
        kind="stem",
        pattern="no",
        negation_guards=["would not say no"],
        label="refusal",
        passed=False,
        evidence=[turn],
    )
    GoldLabel.objects.create(
        judge=judge, conversation=turn.conversation, turn=turn, source=GoldLabel.Source.IMPORTED, passed=False
    )
    return sig


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lea", role="lead"))
    return client


@pytest.fixture
def reviewer_client(make_user):
    # A client of its own: a test may use it beside lead_client.
    from django.test import Client

    client = Client()
    client.force_login(make_user("rui", role="reviewer", languages=["en"]))
    return client


def test_list_full_page_shows_precision(lead_client, signature):
    response = lead_client.get(reverse("signature_list"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" in body
    assert "task_completion" in body
    assert "1.000" in body
    assert reverse("signature_detail", args=[signature.pk]) in body


def test_list_htmx_fragment_filters(lead_client, signature, judge):
    Signature.objects.create(judge=judge, language="fr", intent="gloss", pattern="(e-mail)", label="gloss")
    response = lead_client.get(reverse("signature_list"), {"language": "fr"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body
    assert 'id="signature-results"' in body
    assert "(e-mail)" in body
    assert reverse("signature_detail", args=[signature.pk]) not in body


def test_detail_shows_evidence_escaped(lead_client, signature, turn):
    response = lead_client.get(reverse("signature_detail", args=[signature.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "call-7" in body
    assert "&lt;b&gt;now&lt;/b&gt;" in body
    assert "<b>now</b>" not in body


def test_detail_htmx_fragment(lead_client, signature):
    response = lead_client.get(reverse("signature_detail", args=[signature.pk]), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body
    assert 'id="signature-evidence"' in body


@pytest.mark.parametrize("name", ["signature_list", "signature_create"])
def test_reviewers_are_forbidden(reviewer_client, name):
    assert reviewer_client.get(reverse(name)).status_code == 403
    assert reviewer_client.get(reverse(name), **HTMX).status_code == 403


def test_reviewers_cannot_see_or_post(reviewer_client, signature, judge, turn):
    assert reviewer_client.get(reverse("signature_detail", args=[signature.pk])).status_code == 403
    response = reviewer_client.post(
        reverse("signature_create"),
        {
            "judge": judge.slug,
            "language": "en",
            "intent": "gloss",
            "kind": "substring",
            "pattern": "x",
            "label": "g",
            "evidence": str(turn.pk),
        },
    )
    assert response.status_code == 403
    assert Signature.objects.count() == 1


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("signature_list"))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


# The rule's fields as both the create and the edit form take them.
RULE_FIELDS = {
    "kind": "stem",
    "pattern": "no",
    "negation_guards": "would not say no\nnot say no to",
    "label": "refusal",
    "rating": "",
    "passed": "false",
}


def form_data(judge, turn, **overrides):
    return {
        "judge": judge.slug,
        "language": "en",
        "criterion": "",
        "intent": "decline",
        **RULE_FIELDS,
        "evidence": str(turn.pk),
        **overrides,
    }


def test_create_page_renders_the_form(lead_client, judge):
    response = lead_client.get(reverse("signature_create"))
    assert response.status_code == 200
    assert 'name="negation_guards"' in response.content.decode()


def test_create_a_signature(lead_client, judge, turn):
    response = lead_client.post(reverse("signature_create"), form_data(judge, turn))
    signature = Signature.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("signature_detail", args=[signature.pk])
    assert signature.negation_guards == ["would not say no", "not say no to"]
    assert signature.passed is False
    assert list(signature.evidence.all()) == [turn]
    assert signature.created_by.username == "lea"


def test_decline_without_guards_shows_the_error(lead_client, judge, turn):
    response = lead_client.post(reverse("signature_create"), form_data(judge, turn, negation_guards=""))
    assert response.status_code == 400
    body = response.content.decode()
    assert "needs negation guards" in body
    assert "<html" in body
    assert not Signature.objects.exists()


def test_form_errors_come_back_as_a_fragment_for_htmx(lead_client, judge, turn):
    response = lead_client.post(
        reverse("signature_create"), form_data(judge, turn, kind="regex", pattern="(oops", evidence="99999"), **HTMX
    )
    body = response.content.decode()
    # 200, so htmx swaps the form with its errors in place (it does not swap a 4xx answer).
    assert response.status_code == 200
    assert "<html" not in body
    assert 'id="signature-form"' in body
    assert "No turn with id 99999" in body


def test_htmx_create_redirects_with_hx_redirect(lead_client, judge, turn):
    response = lead_client.post(reverse("signature_create"), form_data(judge, turn), **HTMX)
    signature = Signature.objects.get()
    assert response["HX-Redirect"] == reverse("signature_detail", args=[signature.pk])
    assert response.status_code == 200  # a client redirect: the browser's address follows


def test_evidence_in_another_language_is_refused(lead_client, judge, turn):
    response = lead_client.post(reverse("signature_create"), form_data(judge, turn, language="fr"))
    assert response.status_code == 400
    assert "not in the signature" in response.content.decode()


# --- edit, switch off, history ----------------------------------------------------------------------


def test_edit_page_full_and_fragment_and_forbidden(lead_client, reviewer_client, signature):
    url = reverse("signature_edit", args=[signature.pk])
    full = lead_client.get(url)
    assert full.status_code == 200 and "<html" in full.content.decode()
    assert "would not say no" in full.content.decode()
    fragment = lead_client.get(url, **HTMX).content.decode()
    assert "<html" not in fragment and 'id="signature-form"' in fragment
    assert reviewer_client.get(url).status_code == 403
    assert reviewer_client.post(url, {"kind": "stem", "pattern": "nope"}).status_code == 403


def edit_data(**overrides):
    return {**RULE_FIELDS, "new_evidence": "", "note": "", **overrides}


def test_an_edit_is_a_new_version_in_the_history_with_an_audit_event(lead_client, signature):
    from reviewapp.models import AuditEvent

    url = reverse("signature_edit", args=[signature.pk])
    response = lead_client.post(url, edit_data(note="one more guard"), **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("signature_detail", args=[signature.pk])
    signature.refresh_from_db()
    assert signature.version == 2 and signature.negation_guards == ["would not say no", "not say no to"]
    event = AuditEvent.objects.get(action="signature.edited")
    assert event.actor.username == "lea" and event.before["negation_guards"] == ["would not say no"]
    page = lead_client.get(reverse("signature_detail", args=[signature.pk])).content.decode()
    assert 'id="signature-history"' in page and "one more guard" in page and "Edited" in page


def test_a_loosening_edit_without_evidence_shows_the_error_in_place(lead_client, signature):
    url = reverse("signature_edit", args=[signature.pk])
    response = lead_client.post(url, edit_data(pattern="nope"), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "new evidence turn" in body and 'id="signature-form"' in body
    full = lead_client.post(url, edit_data(pattern="nope"))
    assert full.status_code == 400 and "<html" in full.content.decode()
    signature.refresh_from_db()
    assert signature.pattern == "no" and signature.version == 1


def test_switch_off_and_back_on_with_evidence(lead_client, reviewer_client, signature, turn):
    url = reverse("signature_active", args=[signature.pk])
    assert reviewer_client.post(url, {"active": "0"}).status_code == 403
    assert lead_client.get(url).status_code == 405
    response = lead_client.post(url, {"active": "0", "note": "too broad"})
    assert response.status_code == 302
    signature.refresh_from_db()
    assert not signature.active
    refused = lead_client.post(url, {"active": "1"}, **HTMX)
    assert refused.status_code == 200 and "new evidence turn" in refused.content.decode()
    assert 'id="signature-switch"' in refused.content.decode() and "<html" not in refused.content.decode()
    other = Turn.objects.create(conversation=turn.conversation, position=4, role="agent", text="No, sorry.")
    lead_client.post(url, {"active": "1", "new_evidence": str(other.pk)})
    signature.refresh_from_db()
    assert signature.active
    changes = list(signature.versions.order_by("version").values_list("change", flat=True))
    assert changes == ["created", "switched_off", "switched_on"]


def test_a_suspended_signature_says_so_on_its_page_and_in_the_list(lead_client, signature, turn):
    from reviewapp.judging.services.signature_checks import signatures_recheck

    for position in range(10, 16):
        extra = Turn.objects.create(conversation=turn.conversation, position=position, role="agent", text="No.")
        GoldLabel.objects.create(
            judge=signature.judge, conversation=turn.conversation, turn=extra, source="imported", passed=True
        )
    assert signatures_recheck().suspended == [signature.pk]
    page = lead_client.get(reverse("signature_detail", args=[signature.pk])).content.decode()
    assert "Suspended" in page and "sweeps do not use it" in page
    listing = lead_client.get(reverse("signature_list")).content.decode()
    assert "suspended" in listing


def test_the_edit_form_starts_from_the_signature_as_it_is(lead_client, signature):
    body = lead_client.get(reverse("signature_edit", args=[signature.pk])).content.decode()
    assert '<option value="false" selected>Fail</option>' in body
