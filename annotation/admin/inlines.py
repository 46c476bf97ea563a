"""Tabular inlines whose fields have names. Django's tabular inline labels its columns, not
the inputs in its rows, so a screen reader announces a row's fields without a name (and
axe's ``label`` and ``select-name`` rules fail them): each field here gets its column's
label and its row as an ``aria-label``, e.g. "Prompt, study question 2"."""

from django.contrib import admin
from django.forms.formsets import DELETION_FIELD_NAME
from django.forms.models import BaseInlineFormSet


class LabelledInlineFormSet(BaseInlineFormSet):
    def add_fields(self, form, index):
        super().add_fields(form, index)
        row = f"{self.model._meta.verbose_name} {'new' if index is None else index + 1}"
        for name, field in form.fields.items():
            column = "Delete" if name == DELETION_FIELD_NAME else str(field.label or name).capitalize()
            # The admin wraps a foreign key's select (add and change buttons): name the select.
            widget = getattr(field.widget, "widget", field.widget)
            widget.attrs["aria-label"] = f"{column}, {row}"


class LabelledTabularInline(admin.TabularInline):
    formset = LabelledInlineFormSet
