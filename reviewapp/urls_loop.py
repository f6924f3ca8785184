"""Closing the loop: drafts from corrections and their proof, the label planner, edge-case coverage."""

from django.urls import path

from .views import coverage, drafts, planner

urlpatterns = [
    path("quality/<slug:judge_slug>/draft/", drafts.draft_new, name="draft_new"),
    path("quality/<slug:judge_slug>/versions/", drafts.version_list, name="version_list"),
    path("quality/<slug:judge_slug>/versions/<int:version_id>/", drafts.draft_version, name="draft_version"),
    path("quality/<slug:judge_slug>/versions/<int:version_id>/proof/", drafts.proof_start, name="proof_start"),
    path("quality/<slug:judge_slug>/proofs/<int:proof_id>/", drafts.proof_detail, name="proof_detail"),
    path("quality/<slug:judge_slug>/plan/", planner.plan_page, name="plan_page"),
    path("quality/<slug:judge_slug>/plan/apply/", planner.plan_apply, name="plan_apply"),
    path("quality/<slug:judge_slug>/coverage/", coverage.coverage_page, name="coverage_page"),
    path("quality/<slug:judge_slug>/coverage/<int:case_id>/rule/", coverage.edge_case_rule, name="edge_case_rule"),
    path(
        "conversations/<int:conversation_id>/edge-cases/",
        coverage.conversation_edge_cases,
        name="conversation_edge_cases",
    ),
]
