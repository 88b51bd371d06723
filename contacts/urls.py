from django.urls import path

from . import views

app_name = "contacts"
urlpatterns = [
    path("configs/<str:cfg>/contacts/", views.contacts, name="contacts"),
    path("configs/<str:cfg>/contacts/<str:con>/", views.contact_edit, name="contact_edit"),
    path("configs/<str:cfg>/contacts/<str:con>/delete/", views.contact_delete, name="contact_delete"),
    path("configs/<str:cfg>/contacts/<str:con>/test/", views.contact_test, name="contact_test"),
]
