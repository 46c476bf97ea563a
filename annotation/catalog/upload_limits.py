"""Byte limits enforced while a file streams in, for the API and the admin forms.

Django writes an upload to memory or a temporary file before any view sees it, so a
limit checked in the view comes after the disk has filled. ``UploadLimitHandler`` counts
each file's bytes as they arrive and drops a file at its kind's limit: its temporary
file is deleted and the rest of it is read and thrown away, while the other fields
still parse, so the view can answer with the reason (413 in the API, a form error in
the admin). Nothing of a refused file reaches DATA_DIR/uploads.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import wraps

from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler
from django.views.decorators.csrf import csrf_protect
from rest_framework.parsers import MultiPartParser

from annotation.catalog.uploads import UploadKind
from annotation.core.errors import UploadTooLarge


class UploadLimitHandler(TemporaryFileUploadHandler):
    """Writes each file of a request to a temporary file, up to its kind's limit.

    ``kinds``: file field name -> UploadKind. A file sent in another field is dropped
    unread (the view would ignore it, and it must not fill the disk either).
    ``refusals``: field name -> UploadTooLarge, for the files dropped at their limit.
    """

    def __init__(self, request, kinds: Mapping[str, UploadKind]):
        super().__init__(request)
        self.kinds = dict(kinds)
        self.refusals: dict[str, UploadTooLarge] = {}
        self._kind: UploadKind | None = None
        self._received = 0

    def new_file(self, field_name, file_name, *args, **kwargs):
        self._kind = self.kinds.get(field_name)
        if self._kind is None:
            raise SkipFile
        super().new_file(field_name, file_name, *args, **kwargs)
        self._received = 0

    def receive_data_chunk(self, raw_data, start):
        self._received += len(raw_data)
        if self._received > self._kind.limit:
            self.refusals[self.field_name] = self._kind.refusal(self.file_name)
            # The parser closes (and so deletes) the temporary file and skips the rest.
            raise SkipFile
        self.file.write(raw_data)

    def file_complete(self, file_size):
        completed = super().file_complete(file_size)
        # The parser closes ``self.file`` when it skips a later file; that must not be
        # this one, which belongs to the request now.
        del self.file
        return completed


class LimitedMultiPartParser(MultiPartParser):
    """Multipart parsing under the view's ``upload_kinds`` (field -> UploadKind): a file
    over its limit fails the request with 413 and leaves no temporary file."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = parser_context["request"]
        handler = UploadLimitHandler(request, parser_context["view"].upload_kinds)
        request.upload_handlers = [handler]
        parsed = super().parse(stream, media_type, parser_context)
        if handler.refusals:
            for _field, files in parsed.files.lists():
                for uploaded in files:
                    uploaded.close()
            raise next(iter(handler.refusals.values()))
        return parsed


def limited_upload_view(view, kinds: Mapping[str, UploadKind]):
    """Wrap an admin view whose form takes files of these kinds (field -> UploadKind);
    the view then calls ``upload_form_is_valid`` instead of ``form.is_valid``."""
    protected = csrf_protect(view)

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        request.upload_handlers = [UploadLimitHandler(request, kinds)]
        return protected(request, *args, **kwargs)

    # The CSRF check reads the body, so it must run after the handlers are set: the
    # middleware and admin_view skip this view, and csrf_protect above checks it.
    wrapped.csrf_exempt = True
    return wrapped


def upload_form_is_valid(request, form) -> bool:
    """``form.is_valid()``, with each file the upload handler refused as the error of
    its field (instead of "This field is required")."""
    for handler in request.upload_handlers:
        if isinstance(handler, UploadLimitHandler):
            for field, error in handler.refusals.items():
                form.errors[field] = form.error_class([str(error)])
    return form.is_valid()
