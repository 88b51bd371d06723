from django.urls import path

from collaboration import views

app_name = "collaboration"
urlpatterns = [
    path("approvals/<str:public_id>/comment/", views.comment, name="comment"),
    path("approvals/<str:public_id>/claim/", views.claim, name="claim"),
    path("approvals/<str:public_id>/snooze/", views.snooze, name="snooze"),
]
