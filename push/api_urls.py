from django.urls import path

from . import api

urlpatterns = [
    path("push/subscriptions", api.PushSubscriptionsView.as_view(), name="api-push-subscriptions"),
]
