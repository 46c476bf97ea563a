"""The endpoints that serve CSV (a text/csv answer, or a zip with .csv files), for the walk
of ``tests/annotation/core/test_csv_endpoints.py``, which plants formula-like text in each
free-text field reaching them and reads every cell back.

Two nets keep the list whole. ``tests/conftest.py`` looks at every answer the test client
gets, in every test: a CSV or zip from a view not listed here fails that test. And the
walk reads the URL configuration: a project view whose code makes a file answer (the
markers below) is listed here or in ``FILE_VIEWS_NOT_CSV`` with the reason."""

from __future__ import annotations

import inspect
import re

import pytest

# View name (with its namespace) -> what it serves.
CSV_ENDPOINTS = {
    "export-file": "a finished export's files: the CxC files, *_raw.csv, gold_<split>.csv, study_answers.csv",
    "export-archive": "a finished export as one zip (every .csv file of it)",
    "evaluation-file": "an evaluation's comparison.csv, failures.csv and adversarial.csv (and report.json)",
    "evaluation-review-csv": "the crowd's review of an evaluation's failures, one line per failure per model",
    "campaign-link-participants": "a campaign link's participants, for approving them on the platform",
    "campaign-raters": "the campaign's rater table with ?format=csv",
    "rater-invitations-csv": "the invitation links of a bulk add (API)",
    "admin:auth_user_invitations_csv": "the invitation links of a bulk add (admin page)",
}

# Project views whose code names a file answer but never serves CSV.
FILE_VIEWS_NOT_CSV = {
    "image-file": "serves the dataset's image files",
    "rater-bulk-add": "answers JSON; its Link header names the CSV of rater-invitations-csv",
}

# What in a view's code makes a file answer.
FILE_ANSWER = re.compile(
    r"text/csv|application/zip|FileResponse|StreamingHttpResponse|Content-Disposition|as_attachment"
)
PROJECT_PACKAGES = ("annotation", "sampling", "frontend", "config", "web")


def serves_csv(response) -> bool:
    """Whether an answer is a CSV file or a zip (which may hold CSV files)."""
    media = response.get("Content-Type", "").split(";")[0].strip().lower()
    disposition = response.get("Content-Disposition", "")
    named = re.search(r'filename="?([^";]+)', disposition)
    suffix = named.group(1).lower().rsplit(".", 1)[-1] if named else ""
    return media in ("text/csv", "application/zip") or suffix in ("csv", "zip")


def check_walked(response) -> None:
    """Fail the test when ``response`` is a CSV (or zip) from a view the walk does not
    know: the new endpoint must be added to CSV_ENDPOINTS and walked."""
    if not serves_csv(response):
        return
    match = getattr(response, "resolver_match", None)
    view = match.view_name if match is not None else "(unresolved)"
    if view not in CSV_ENDPOINTS:
        pytest.fail(
            f"the view {view!r} served a CSV or zip ({response.get('Content-Type')}), but "
            "tests/support/csv_endpoints.py does not list it: add it to CSV_ENDPOINTS and walk it "
            "in tests/annotation/core/test_csv_endpoints.py with hostile text in its free-text fields"
        )


def view_code(callback):
    """The function or class whose code answers a URL pattern's ``callback`` (through
    as_view() and decorators), or None when it is not the project's."""
    target = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if target is None:
        target = inspect.unwrap(callback)
    module = getattr(target, "__module__", "") or ""
    if module.split(".")[0] not in PROJECT_PACKAGES:
        return None
    return target


def file_answer_views(patterns, namespace: str = "") -> dict[str, object]:
    """View name -> code of every project view in ``patterns`` (walked down through
    includes) whose code makes a file answer."""
    found = {}
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            found |= file_answer_views(pattern.url_patterns, inner)
            continue
        code = view_code(pattern.callback)
        if code is None or not FILE_ANSWER.search(inspect.getsource(code)):
            continue
        found[f"{namespace}{pattern.name}"] = code
    return found


def file_answer_actions(site) -> dict[str, object]:
    """The same for the admin actions of ``site``'s model pages, named by the changelist
    view that answers them: an action may answer with a file too."""
    found = {}
    for model, model_admin in site._registry.items():
        for action in model_admin.actions or ():
            code = view_code(getattr(model_admin, action) if isinstance(action, str) else action)
            if code is not None and FILE_ANSWER.search(inspect.getsource(code)):
                found[f"{site.name}:{model._meta.app_label}_{model._meta.model_name}_changelist"] = code
    return found
