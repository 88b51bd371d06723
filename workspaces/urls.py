from django.urls import path

from . import views

app_name = "workspaces"
urlpatterns = [
    path("switch/", views.switch, name="switch"),
]
