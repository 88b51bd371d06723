from django.urls import path

from .telegram_views import TelegramWebhookView
from .views import SlackEventsView, SlackInteractionsView

app_name = "integrations"
urlpatterns = [
    path("slack/interactions", SlackInteractionsView.as_view(), name="slack-interactions"),
    path("slack/events", SlackEventsView.as_view(), name="slack-events"),
    path("telegram/webhook", TelegramWebhookView.as_view(), name="telegram-webhook"),
]
