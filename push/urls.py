from django.urls import path

from . import views

app_name = "push"
urlpatterns = [
    path("sw.js", views.service_worker, name="service-worker"),
    path("offline/", views.offline, name="offline"),
]
