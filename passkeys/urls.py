from django.urls import path

from . import views

app_name = "passkeys"
urlpatterns = [
    path("account/passkeys/confirm/", views.confirm_options, name="confirm"),
    path("account/passkeys/options/", views.registration_options, name="options"),
    path("account/passkeys/", views.register, name="register"),
    path("account/passkeys/<str:public_id>/rename/", views.rename, name="rename"),
    path("account/passkeys/<str:public_id>/remove/", views.remove, name="remove"),
]
