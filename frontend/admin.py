from django.contrib import admin

from frontend.models import WorkedExample


@admin.register(WorkedExample)
class WorkedExampleAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "kind", "reference_score", "position", "active", "explanation"]
    list_filter = ["dataset", "kind", "active"]
    list_editable = ["position", "active"]
    raw_id_fields = ["caption_a", "caption_b", "image_a", "image_b"]
