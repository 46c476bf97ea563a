"""Domain errors raised by services; views turn them into 4xx responses with the message."""


class DomainError(Exception):
    """A request that cannot be carried out as asked. The message names the problem."""

    code = "invalid"
    http_status = 400
    # Extra response headers (e.g. Retry-After); set per instance by subclasses.
    headers: dict[str, str] | None = None
    # The input the error is about, when the code that raised it knows (a form shows the
    # error on that field); None: the request as a whole.
    field: str | None = None


class DatasetImportError(DomainError):
    """Bad import input. Nothing was written."""

    code = "import_invalid"


class NotFound(DomainError):
    code = "not_found"
    http_status = 404


class Conflict(DomainError):
    code = "conflict"
    http_status = 409


class Forbidden(DomainError):
    code = "forbidden"
    http_status = 403


class UploadTooLarge(DomainError):
    """An uploaded file is over its kind's byte limit (UPLOAD_MAX_*_BYTES). Nothing was kept."""

    code = "upload_too_large"
    http_status = 413


class UploadRemoved(Conflict):
    """A run cannot start again: the file uploaded for it was removed (UPLOAD_KEEP_FAILED_DAYS)."""

    code = "upload_removed"


class BackupError(DomainError):
    """A backup that cannot be made, or a backup that is not restored: the message names the
    file, table, version or folder at fault and says what was left as it was."""

    code = "backup_refused"
