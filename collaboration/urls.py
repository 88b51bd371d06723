from django.urls import path

from collaboration import requests, views

app_name = "collaboration"
urlpatterns = [
    path("approvals/<str:public_id>/comment/", views.comment, name="comment"),
    path("approvals/<str:public_id>/claim/", views.claim, name="claim"),
    path("approvals/<str:public_id>/snooze/", views.snooze, name="snooze"),
    path("approvals/<str:public_id>/withdraw/", requests.withdraw, name="withdraw"),
    path("my-requests/", requests.my_requests, name="my-requests"),
]
