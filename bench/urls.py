"""The portal's URLs plus the floor views, served by the same process."""

from django.urls import path

from hitl_portal.urls import handler404, handler500  # noqa: F401
from hitl_portal.urls import urlpatterns as portal_urlpatterns

from . import floor

urlpatterns = [
    path("bench/floor/approvals", floor.FloorRegisterView.as_view()),
    path("bench/floor/approvals/<str:apr>", floor.FloorPollView.as_view()),
    *portal_urlpatterns,
]
