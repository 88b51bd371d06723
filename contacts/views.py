"""The Contacts tab: a config's draft approver channels. Members read; admins change."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from rules.selectors import config_for
from rules.views import config_page_context
from workspaces.decorators import admin_required, member_required

from . import selectors, services
from .exceptions import ContactInUse
from .forms import ContactForm
from .models import Contact
from .presenters import delivery_rows
from .selectors import contact_for


@member_required
@require_http_methods(["GET", "POST"])
def contacts(request: HttpRequest, cfg: str) -> HttpResponse:
    config = config_for(workspace=request.actor.workspace, public_id=cfg)
    form = ContactForm()
    if request.method == "POST":
        if not request.actor.is_admin:
            raise PermissionDenied("Only a workspace admin may change this.")
        form = ContactForm(request.POST, instance=Contact(config=config))
        if form.is_valid():
            services.contact_create(config=config, user=request.user, **form.cleaned_data)
            messages.success(request, "Added the contact to the draft. Publish to serve it.")
            return redirect("contacts:contacts", config.public_id)
    context = config_page_context(request, config, "contacts")
    context["form"] = form
    recent = selectors.recent_by_contact(config.workspace, [c.public_id for c in context["contacts"]])
    context["rows"] = [{"contact": c, "deliveries": delivery_rows(recent[c.public_id])} for c in context["contacts"]]
    return render(request, "contacts/contacts.html", context, status=400 if form.errors else 200)


@admin_required
@require_http_methods(["GET", "POST"])
def contact_edit(request: HttpRequest, cfg: str, con: str) -> HttpResponse:
    config = config_for(workspace=request.actor.workspace, public_id=cfg)
    contact = contact_for(config=config, public_id=con)
    form = ContactForm(instance=contact)
    if request.method == "POST":
        form = ContactForm(request.POST, instance=contact)
        if form.is_valid():
            services.contact_update(contact=form.instance, user=request.user, **form.cleaned_data)
            messages.success(request, "Saved the contact in the draft. Publish to serve it.")
            return redirect("contacts:contacts", config.public_id)
    context = config_page_context(request, config, "contacts")
    context.update(form=form, contact=contact)
    return render(request, "contacts/contact_edit.html", context, status=400 if form.errors else 200)


@admin_required
@require_POST
def contact_delete(request: HttpRequest, cfg: str, con: str) -> HttpResponse:
    config = config_for(workspace=request.actor.workspace, public_id=cfg)
    try:
        services.contact_delete(contact=contact_for(config=config, public_id=con), user=request.user)
    except ContactInUse as refusal:
        messages.error(request, refusal.message)
        return redirect("contacts:contacts", config.public_id)
    messages.success(request, "Deleted the contact from the draft. Published versions keep it.")
    return redirect("contacts:contacts", config.public_id)


@admin_required
@require_POST
def contact_test(request: HttpRequest, cfg: str, con: str) -> HttpResponse:
    """Send test: a `test` event queued for the cluster, shown in the contact's recent deliveries."""
    config = config_for(workspace=request.actor.workspace, public_id=cfg)
    contact = contact_for(config=config, public_id=con)
    try:
        delivery = services.contact_test(contact=contact)
    except ValidationError as refusal:
        messages.error(request, " ".join(refusal.messages))
        return redirect("contacts:contacts", config.public_id)
    messages.success(request, f"Queued a test to {contact.name} ({delivery.public_id}). Its status shows below.")
    return redirect("contacts:contacts", config.public_id)
