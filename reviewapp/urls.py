"""Every URL of the site, grouped in the order of the loop: corpus, judging, triage and queue, review,
adjudication, quality, exports, people. The API has its own module (`reviewapp.api.urls`), included last
because it answers every other URL under /api/ with a JSON 404."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from reviewapp.lazy_views import views_in

# Imported on their first request (lazy_views.py): loading the URLconf imports no view.
disputes = views_in("reviewapp.adjudication.views.disputes")
audio = views_in("reviewapp.corpus.views.audio")
conversations = views_in("reviewapp.corpus.views.conversations")
datasets = views_in("reviewapp.corpus.views.datasets")
imports = views_in("reviewapp.corpus.views.imports")
exports = views_in("reviewapp.exports.views.exports")
calls = views_in("reviewapp.judging.views.calls")
signatures = views_in("reviewapp.judging.views.signatures")
sweeps = views_in("reviewapp.judging.views.sweeps")
home = views_in("reviewapp.people.views.home")
people = views_in("reviewapp.people.views.people")
compare = views_in("reviewapp.quality.views.compare")
coverage = views_in("reviewapp.quality.views.coverage")
drafts = views_in("reviewapp.quality.views.drafts")
quality = views_in("reviewapp.quality.views.quality")
reviewers = views_in("reviewapp.quality.views.reviewers")
comments = views_in("reviewapp.review.views.comments")
review = views_in("reviewapp.review.views.review")
planner = views_in("reviewapp.triage.views.planner")
queue = views_in("reviewapp.triage.views.queue")
triage = views_in("reviewapp.triage.views.triage")

site_urls = [
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]

corpus_urls = [
    path("datasets/", datasets.dataset_list, name="dataset_list"),
    path("datasets/<int:dataset_id>/", datasets.dataset_detail, name="dataset_detail"),
    path("datasets/<int:dataset_id>/settings/", datasets.dataset_settings, name="dataset_settings"),
    path("imports/new/", imports.import_new, name="import_new"),
    path("imports/<int:job_id>/", imports.import_detail, name="import_detail"),
    path("conversations/<int:conversation_id>/", conversations.conversation_detail, name="conversation_detail"),
    path(
        "conversations/<int:conversation_id>/turns/<int:turn_id>/",
        conversations.conversation_turn,
        name="conversation_turn",
    ),
    path("conversations/<int:conversation_id>/audio/", audio.conversation_audio, name="conversation_audio"),
]

judging_urls = [
    path("signatures/", signatures.signature_list, name="signature_list"),
    path("signatures/new/", signatures.signature_new, name="signature_create"),
    path("signatures/<int:signature_id>/", signatures.signature_detail, name="signature_detail"),
    path("signatures/<int:signature_id>/edit/", signatures.signature_edit, name="signature_edit"),
    path("signatures/<int:signature_id>/active/", signatures.signature_active, name="signature_active"),
    path("sweeps/", sweeps.sweep_list, name="sweep_list"),
    path("sweeps/new/", sweeps.sweep_new, name="sweep_new"),
    path("sweeps/<int:sweep_id>/", sweeps.sweep_detail, name="sweep_detail"),
    path("calls/<int:call_id>/", calls.call_detail, name="call_detail"),
    path("calls/<int:call_id>/replay/", calls.call_replay, name="call_replay"),
    path("calls/replays/<int:replay_id>/", calls.replay_status, name="replay_status"),
]

queue_urls = [
    path("datasets/<int:dataset_id>/triage/", triage.dataset_triage_run, name="dataset_triage"),
    path("queue/", queue.queue_index, name="queue_index"),
    path("queue/next/", queue.queue_next, name="queue_next"),
    path("queue/progress/", queue.queue_progress, name="queue_progress"),
    path("queue/bulk/", queue.queue_bulk, name="queue_bulk"),
    path("quality/<slug:judge_slug>/plan/", planner.plan_page, name="plan_page"),
    path("quality/<slug:judge_slug>/plan/apply/", planner.plan_apply, name="plan_apply"),
]

review_urls = [
    path("review/next/", review.review_next, name="review_next"),
    path("review/<int:item_id>/", review.review_item, name="review_item"),
    path("review/<int:item_id>/claim/", review.review_claim, name="review_claim"),
    path("review/<int:item_id>/skip/", review.review_skip, name="review_skip"),
    path("review/<int:item_id>/heartbeat/", review.review_heartbeat, name="review_heartbeat"),
    path("review/<int:item_id>/verdicts/", review.review_verdicts, name="review_verdicts"),
    path("turns/<int:turn_id>/comments/", comments.turn_comments, name="turn_comments"),
    path("comments/", comments.comment_list, name="comment_list"),
    path("comments/<int:comment_id>/flag/", comments.comment_flag, name="comment_flag"),
    path("categories/", comments.category_list, name="category_list"),
]

adjudication_urls = [
    path("disputes/", disputes.dispute_list, name="dispute_list"),
    path("disputes/<int:item_id>/", disputes.dispute_detail, name="dispute_detail"),
    path("disputes/<int:item_id>/decide/", disputes.dispute_decide, name="dispute_decide"),
    path("disputes/<int:item_id>/send-back/", disputes.dispute_send_back, name="dispute_send_back"),
]

quality_urls = [
    path("quality/", quality.quality_index, name="quality_index"),
    path("quality/<slug:judge_slug>/", quality.quality_judge, name="quality_judge"),
    path("quality/<slug:judge_slug>/compare/", compare.compare_versions, name="compare_versions"),
    path("quality/<slug:judge_slug>/draft/", drafts.draft_new, name="draft_new"),
    path("quality/<slug:judge_slug>/versions/", drafts.version_list, name="version_list"),
    path("quality/<slug:judge_slug>/versions/<int:version_id>/", drafts.draft_version, name="draft_version"),
    path("quality/<slug:judge_slug>/versions/<int:version_id>/proof/", drafts.proof_start, name="proof_start"),
    path("quality/<slug:judge_slug>/proofs/<int:proof_id>/", drafts.proof_detail, name="proof_detail"),
    path("quality/<slug:judge_slug>/coverage/", coverage.coverage_page, name="coverage_page"),
    path("quality/<slug:judge_slug>/coverage/<int:case_id>/rule/", coverage.edge_case_rule, name="edge_case_rule"),
    path(
        "conversations/<int:conversation_id>/edge-cases/",
        coverage.conversation_edge_cases,
        name="conversation_edge_cases",
    ),
    path("reviewers/", reviewers.reviewer_list, name="reviewer_list"),
    path("reviewers/<int:user_id>/", reviewers.reviewer_detail, name="reviewer_detail"),
]

export_urls = [
    path("exports/", exports.snapshot_list, name="snapshot_list"),
    path("exports/new/", exports.snapshot_new, name="snapshot_new"),
    path("exports/<int:snapshot_id>/", exports.snapshot_detail, name="snapshot_detail"),
    path("exports/<int:snapshot_id>/download/", exports.snapshot_download, name="snapshot_download"),
]

people_urls = [
    path("people/", people.people_list, name="people_list"),
    path("people/new/", people.person_new, name="person_new"),
    path("people/<int:user_id>/", people.person_edit, name="person_edit"),
]

urlpatterns = [
    *site_urls,
    *corpus_urls,
    *judging_urls,
    *queue_urls,
    *review_urls,
    *adjudication_urls,
    *quality_urls,
    *export_urls,
    *people_urls,
    path("", include("reviewapp.api.urls")),
]
