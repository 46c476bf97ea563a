import pytest

from tests.support.evaluation_data import annotate_hand_dataset, import_hand_spaces
from tests.support.review_support import explained_job_id


@pytest.fixture
def job(hand_dataset, hand_files, settings, tmp_path, django_capture_on_commit_callbacks):
    """The hand-built split with its objects and an explained evaluation of it (two models,
    12 failures, 6 distinct): (dataset, job id)."""
    settings.EXPORT_DIR = str(tmp_path / "exports")
    annotate_hand_dataset(hand_dataset)
    import_hand_spaces(hand_dataset, hand_files)
    return hand_dataset, explained_job_id(hand_dataset, django_capture_on_commit_callbacks)
