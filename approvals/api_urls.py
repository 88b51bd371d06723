from django.urls import path, register_converter
from django.urls.converters import PathConverter

from approvals import api
from approvals.engine import api as api_engine
from approvals.grants import api as api_grants
from approvals.halts import api as api_halts
from approvals.review import api as api_reviewer
from approvals.review import api_batch, api_withdraw


class RunIdConverter(PathConverter):
    """A run id in a path as an engine may have registered it: a slash or a line break included (Django's
    `path` stops at a line break), so every run that can be halted can be resumed."""

    regex = r"[\s\S]+"


register_converter(RunIdConverter, "run_id")

urlpatterns = [
    path("approvals", api.ApprovalCollectionView.as_view(), name="api-approvals"),
    path("approvals/decide", api_batch.BatchDecisionView.as_view(), name="api-approvals-decide"),
    path("approvals/<str:apr>", api_engine.ApprovalDetailView.as_view(), name="api-approval"),
    path("approvals/<str:apr>/outcome", api_engine.ApprovalOutcomeView.as_view(), name="api-approval-outcome"),
    path("configs/<str:cfg>/served", api_engine.ServedConfigView.as_view(), name="api-config-served"),
    path("approvals/<str:apr>/decision", api_reviewer.DecisionView.as_view(), name="api-approval-decision"),
    path("approvals/<str:apr>/withdraw", api_withdraw.WithdrawView.as_view(), name="api-approval-withdraw"),
    path("grants", api_grants.GrantListView.as_view(), name="api-grants"),
    path("grants/<str:grt>", api_grants.GrantDetailView.as_view(), name="api-grant"),
    path("runs/halt", api_halts.RunHaltView.as_view(), name="api-runs-halt"),
    path("runs/halt/<run_id:run_id>", api_halts.RunResumeView.as_view(), name="api-run-halt"),
    path("workspace/freeze", api_halts.WorkspaceFreezeView.as_view(), name="api-workspace-freeze"),
]
