"""The Django floor's two endpoints, at the portal's engine paths."""

from django.urls import path

from . import floor

urlpatterns = [
    path("api/v1/approvals", floor.FloorRegisterView.as_view()),
    path("api/v1/approvals/<str:apr>", floor.FloorPollView.as_view()),
]
