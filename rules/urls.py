from django.urls import path

from . import policy_views, views

app_name = "rules"
urlpatterns = [
    path("configs/", views.configs, name="configs"),
    path("rules/which-one/", views.which_one, name="which_one"),
    path("configs/<str:cfg>/rename/", views.config_rename, name="config_rename"),
    path("configs/<str:cfg>/rules/", views.rules, name="rules"),
    path("configs/<str:cfg>/rules/add/", views.rule_add, name="rule_add"),
    path("configs/<str:cfg>/rules/<str:rul>/", views.rule_edit, name="rule_edit"),
    path("configs/<str:cfg>/rules/<str:rul>/toggle/", views.rule_toggle, name="rule_toggle"),
    path("configs/<str:cfg>/rules/<str:rul>/delete/", views.rule_delete, name="rule_delete"),
    path("configs/<str:cfg>/settings/", views.config_settings, name="settings"),
    path("configs/<str:cfg>/publish/", views.publish, name="publish"),
    path("configs/<str:cfg>/pin/", views.pin, name="pin"),
    path("configs/<str:cfg>/versions/<int:number>/", views.version, name="version"),
    path("configs/<str:cfg>/condition-check/", policy_views.condition_check, name="condition_check"),
    path("configs/<str:cfg>/dry-run/", policy_views.dry_run, name="dry_run"),
    path("configs/<str:cfg>/proposals/<str:prp>/", policy_views.proposal_decide, name="proposal_decide"),
]
