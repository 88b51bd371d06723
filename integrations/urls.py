from django.urls import path

from .views import SlackInteractionsView

app_name = "integrations"
urlpatterns = [
    path("slack/interactions", SlackInteractionsView.as_view(), name="slack-interactions"),
]
