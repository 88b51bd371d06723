from django.urls import path

from . import api

urlpatterns = [
    path("configs/<str:cfg>/contacts", api.ContactListView.as_view(), name="api-contacts"),
    path("configs/<str:cfg>/contacts/<str:con>", api.ContactDetailView.as_view(), name="api-contact"),
]
