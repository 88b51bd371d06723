from django.shortcuts import render

from workspaces.decorators import member_required


@member_required
def queue(request):
    return render(request, "approvals/queue.html", {"tab": "approvals"})
