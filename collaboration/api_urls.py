from django.urls import path

from collaboration import api

urlpatterns = [
    path("approvals/<str:apr>/comments", api.CommentsView.as_view(), name="api-approval-comments"),
    path("approvals/<str:apr>/claim", api.ClaimView.as_view(), name="api-approval-claim"),
    path("approvals/<str:apr>/snooze", api.SnoozeView.as_view(), name="api-approval-snooze"),
    path("runs/<str:run_id>", api.RunView.as_view(), name="api-run"),
]
