from django.urls import path

from people import views

app_name = "people"

urlpatterns = [
    path("people/", views.people, name="people"),
    path("people/groups/", views.group_create, name="group-create"),
    path("people/groups/<str:grp>/members/", views.group_member, name="group-member"),
    path("people/delegations/<str:dlg>/end/", views.delegation_end, name="delegation-end"),
    path("account/delegation/", views.my_delegation, name="my-delegation"),
]
