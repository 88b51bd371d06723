from django.urls import path

from . import api

urlpatterns = [path("audit", api.AuditExportView.as_view(), name="api-audit")]
