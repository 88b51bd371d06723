from django.urls import path

from approvals.grants import views as views_grants
from approvals.halts import views as views_halts
from approvals.review import step_up, views, views_batch, views_outcome

app_name = "approvals"
urlpatterns = [
    path("approvals/", views.queue, name="queue"),
    path("approvals/queue/", views.queue_cards, name="queue-cards"),
    path("approvals/history/", views.history, name="history"),
    path("approvals/select/", views_batch.select, name="batch-select"),
    path("approvals/select/review/", views_batch.review, name="batch-review"),
    path("approvals/<str:public_id>/decide/", views.decide, name="decide"),
    path("approvals/<str:public_id>/decide/step-up/", step_up.step_up, name="step-up"),
    path("approvals/<str:public_id>/edit-check/", views.edit_check, name="edit-check"),
    path("approvals/<str:public_id>/outcome/", views_outcome.record_outcome, name="record_outcome"),
    path("grants/", views.grants, name="grants"),
    path("runs/halt/", views_halts.halt_run, name="halt-run"),
    path("runs/resume/", views_halts.resume_run, name="resume-run"),
    path("workspace/freeze/", views_halts.freeze, name="freeze"),
    path("grants/<str:public_id>/revoke/", views.grant_revoke, name="grant-revoke"),
    path("configs/<str:cfg>/windows/", views_grants.window_open, name="window_open"),
    path("configs/<str:cfg>/windows/<str:grt>/close/", views_grants.window_close, name="window_close"),
    path("approvals/<str:public_id>/", views.detail, name="detail"),
    path("r/<str:token>", views.link, name="link"),
]
