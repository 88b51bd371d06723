from django.urls import path

from people import api

urlpatterns = [
    path("groups", api.GroupListView.as_view(), name="api-groups"),
    path("groups/<str:grp>", api.GroupDetailView.as_view(), name="api-group"),
    path("groups/<str:grp>/members", api.GroupMembersView.as_view(), name="api-group-members"),
    path("groups/<str:grp>/members/<str:email>", api.GroupMemberView.as_view(), name="api-group-member"),
    path("me/delegation", api.MyDelegationView.as_view(), name="api-my-delegation"),
    path("delegations", api.DelegationListView.as_view(), name="api-delegations"),
    path("delegations/<str:dlg>", api.DelegationDetailView.as_view(), name="api-delegation"),
]
