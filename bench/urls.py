"""The portal's URLs plus the floor views, served by the same process."""

from django.urls import path

from hitl_portal.urls import handler404, handler500  # noqa: F401
from hitl_portal.urls import urlpatterns as portal_urlpatterns

from . import floor

urlpatterns = [
    # Under /api/: a Bearer call there takes the API door, with its minimal middleware, like the real endpoints.
    path("api/bench/floor/approvals", floor.FloorRegisterView.as_view()),
    path("api/bench/floor/approvals/<str:apr>", floor.FloorPollView.as_view()),
    *portal_urlpatterns,
]
