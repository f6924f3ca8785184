from django.urls import path

from .views import audio, comments, people, queue, review

urlpatterns = [
    path("queue/", queue.queue_index, name="queue_index"),
    path("queue/next/", queue.queue_next, name="queue_next"),
    path("queue/progress/", queue.queue_progress, name="queue_progress"),
    path("queue/bulk/", queue.queue_bulk, name="queue_bulk"),
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
    path("people/", people.people_list, name="people_list"),
    path("people/new/", people.person_new, name="person_new"),
    path("people/<int:user_id>/", people.person_edit, name="person_edit"),
    path("conversations/<int:conversation_id>/audio/", audio.conversation_audio, name="conversation_audio"),
]
