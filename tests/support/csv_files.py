"""An uploaded CSV file made of a string."""

from django.core.files.uploadedfile import SimpleUploadedFile


def csv(content: bytes, name: str = "raters.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/csv")
