"""The portal's form renderer: Django's, with our field layout for `{{ field.as_field_group }}`."""

from django.forms.renderers import TemplatesSetting


class FormRenderer(TemplatesSetting):
    """Templates from TEMPLATES (so templates/forms/field.html is found; django.forms supplies the widgets)."""

    field_template_name = "forms/field.html"
