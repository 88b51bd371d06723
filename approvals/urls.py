from django.urls import path

from . import views

app_name = "approvals"
urlpatterns = [
    path("approvals/", views.queue, name="queue"),
    path("approvals/queue/", views.queue_cards, name="queue-cards"),
    path("approvals/history/", views.history, name="history"),
    path("approvals/<str:public_id>/decide/", views.decide, name="decide"),
    path("approvals/<str:public_id>/edit-check/", views.edit_check, name="edit-check"),
    path("grants/", views.grants, name="grants"),
    path("grants/<str:public_id>/revoke/", views.grant_revoke, name="grant-revoke"),
    path("approvals/<str:public_id>/", views.detail, name="detail"),
    path("r/<str:token>", views.link, name="link"),
]
