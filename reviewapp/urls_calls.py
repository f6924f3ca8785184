from django.urls import path

from .views import calls

urlpatterns = [
    path("calls/<int:call_id>/", calls.call_detail, name="call_detail"),
    path("calls/<int:call_id>/replay/", calls.call_replay, name="call_replay"),
    path("calls/replays/<int:replay_id>/", calls.replay_status, name="replay_status"),
]
