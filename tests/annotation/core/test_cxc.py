"""The CxC facts module agrees with the models built on it. No database."""

from annotation.core import cxc
from annotation.models import TaskKind


def test_the_models_task_kinds_are_the_cxc_kinds_in_order_then_the_review():
    assert [kind.value for kind in TaskKind] == [*cxc.KINDS, TaskKind.REV]


def test_every_kind_has_a_threshold_on_the_scale_a_file_prefix_and_item_columns():
    for table in (cxc.POSITIVE_THRESHOLDS, cxc.FILE_PREFIX, cxc.ITEM_COLUMNS):
        assert tuple(table) == cxc.KINDS
    assert all(cxc.SCORE_MIN < threshold < cxc.SCORE_MAX for threshold in cxc.POSITIVE_THRESHOLDS.values())
