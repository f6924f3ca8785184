from django.urls import path

from .views import compare, disputes, quality, reviewers

urlpatterns = [
    path("disputes/", disputes.dispute_list, name="dispute_list"),
    path("disputes/<int:item_id>/", disputes.dispute_detail, name="dispute_detail"),
    path("disputes/<int:item_id>/decide/", disputes.dispute_decide, name="dispute_decide"),
    path("disputes/<int:item_id>/send-back/", disputes.dispute_send_back, name="dispute_send_back"),
    path("quality/", quality.quality_index, name="quality_index"),
    path("quality/<slug:judge_slug>/", quality.quality_judge, name="quality_judge"),
    path("quality/<slug:judge_slug>/compare/", compare.compare_versions, name="compare_versions"),
    path("reviewers/", reviewers.reviewer_list, name="reviewer_list"),
    path("reviewers/<int:user_id>/", reviewers.reviewer_detail, name="reviewer_detail"),
]
