from django.urls import path

from approvals.halts import views as views_halts
from approvals.review import views, views_outcome

app_name = "approvals"
urlpatterns = [
    path("approvals/", views.queue, name="queue"),
    path("approvals/queue/", views.queue_cards, name="queue-cards"),
    path("approvals/history/", views.history, name="history"),
    path("approvals/<str:public_id>/decide/", views.decide, name="decide"),
    path("approvals/<str:public_id>/edit-check/", views.edit_check, name="edit-check"),
    path("approvals/<str:public_id>/outcome/", views_outcome.record_outcome, name="record_outcome"),
    path("grants/", views.grants, name="grants"),
    path("runs/halt/", views_halts.halt_run, name="halt-run"),
    path("runs/resume/", views_halts.resume_run, name="resume-run"),
    path("workspace/freeze/", views_halts.freeze, name="freeze"),
    path("grants/<str:public_id>/revoke/", views.grant_revoke, name="grant-revoke"),
    path("approvals/<str:public_id>/", views.detail, name="detail"),
    path("r/<str:token>", views.link, name="link"),
]
