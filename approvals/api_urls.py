from django.urls import path

from . import api

urlpatterns = [
    path("approvals", api.ApprovalCollectionView.as_view(), name="api-approvals"),
]
