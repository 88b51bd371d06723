from django.urls import path

from . import api, api_deliveries

urlpatterns = [
    path("configs/<str:cfg>/contacts", api.ContactListView.as_view(), name="api-contacts"),
    path("configs/<str:cfg>/contacts/<str:con>", api.ContactDetailView.as_view(), name="api-contact"),
    path(
        "configs/<str:cfg>/contacts/<str:con>/test", api_deliveries.ContactTestView.as_view(), name="api-contact-test"
    ),
    path("deliveries", api_deliveries.DeliveryListView.as_view(), name="api-deliveries"),
]
