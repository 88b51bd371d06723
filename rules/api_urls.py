from django.urls import path, re_path

from . import api

# docs/api.md paths have no trailing slash. `configs/<cfg>/served` belongs to the engine API (approvals).
urlpatterns = [
    path("configs", api.ConfigListView.as_view(), name="api-configs"),
    path("configs/<str:cfg>", api.ConfigDetailView.as_view(), name="api-config"),
    path("configs/<str:cfg>/rules", api.RuleListView.as_view(), name="api-rules"),
    path("configs/<str:cfg>/rules/<str:rul>", api.RuleDetailView.as_view(), name="api-rule"),
    path("configs/<str:cfg>/publish", api.PublishView.as_view(), name="api-publish"),
    path("configs/<str:cfg>/versions", api.VersionListView.as_view(), name="api-versions"),
    path("configs/<str:cfg>/versions/<int:number>", api.VersionDetailView.as_view(), name="api-version"),
    path("configs/<str:cfg>/pin", api.PinView.as_view(), name="api-pin"),
    path("configs/<str:cfg>/simulate", api.SimulateView.as_view(), name="api-simulate"),
    path("configs/<str:cfg>/proposals", api.ProposalListView.as_view(), name="api-proposals"),
    re_path(
        r"^configs/(?P<cfg>[^/]+)/proposals/(?P<prp>[^/]+)/(?P<action>accept|dismiss)$",
        api.ProposalResolveView.as_view(),
        name="api-proposal-resolve",
    ),
]
