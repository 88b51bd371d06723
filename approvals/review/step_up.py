"""A request page's step-up challenge (passkeys/stepup.py): what the page's script asks for before it
approves with a passkey. The browser side is static/js/passkeys.js."""

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from approvals.edits.checks import approved_call, parse_edited
from approvals.exceptions import ApprovalNotFound
from approvals.review.permissions import DECIDERS_ONLY, may_decide
from approvals.review.selectors import approval_get
from common.exceptions import DomainError
from passkeys.stepup import step_up_options
from passkeys.views import json_body, refusal_response
from workspaces.decorators import member_required


@require_POST
@member_required
def step_up(request: HttpRequest, public_id: str) -> JsonResponse:
    """A challenge bound to this request, for approving it with a passkey on its page."""
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    try:
        approval = approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    try:
        return JsonResponse(
            step_up_options(approval=approval, user=request.user, approved_digest=_approved_digest(request, approval))
        )
    except DomainError as refused:
        return refusal_response(refused)


def _approved_digest(request: HttpRequest, approval) -> str:
    """The digest of the call the reviewer is about to approve: the editor's arguments when the page sent them
    (checked as the decision will check them), else the proposal's."""
    text = json_body(request).get("arguments")
    if not isinstance(text, str):
        return approved_call(approval=approval, decision="approve").digest
    return approved_call(approval=approval, decision="approve", arguments=parse_edited(text), edit=True).digest
