"""Score a model's embeddings against a rated dataset with the CxC metrics. Pure numpy, no
Django, except ``jobs`` (evaluation jobs run from the researcher page and the API),
``explained`` and ``failure_pages``.

The ratings are CxC-format CSV files (``sts_<split>.csv``, ``sis_<split>.csv``,
``sits_<split>.csv``: two item ids, ``agg_score``, ``sampling_method``), ours or the
public release; the split's items and their original image-caption pairs come from the
caller (the imported dataset).

Retrieval (Recall@1/5/10 and median rank of the first correct item, 1-based):

- image->text and text->image, positives: the original pairs ("original"), and the
  original pairs plus every SITS pair scored >= 3 ("cxc");
- text->text, positives: STS pairs scored >= 3; image->image: SIS pairs scored >= 2.5.
  Candidates are all other items of the split; the query itself is never a candidate.

Queries are the items with at least one positive. The rank of the first correct item
is 1 + the number of non-positive candidates scoring at least as high as the best
positive: ties count against the model, so a constant model cannot score well. Ranks
are counted from blocked matrix products, never by sorting whole rows.

A pair rated in more than one row (the public SIS file rates some pairs in both orders)
is a positive when the mean of its rows reaches the threshold.

Correlation with human scores (STS, SIS, SITS): the sampled bootstrap of the CxC paper
(see ``correlation``), with a 95% interval from its samples.

Modules: ``inputs`` (files, vectors, split items, EvaluationError), ``rows`` (rated rows
mapped to the split), ``ranks`` (first correct rank, recall), ``retrieval`` (the four
retrieval tasks), ``correlation`` (Spearman, bootstrap), ``intervals`` (bootstrap,
percentile and Fisher-z intervals), ``unavailable`` (why a figure has no value),
``report`` (``evaluate``), ``table`` (``format_report``). The names below are the
package's public interface. ``explain`` is a package of its own: why a model failed a
query, from the objects annotated in the images (numpy and scipy, no Django);
``explained`` runs it in an evaluation (the split's captions and objects read, the
failures file written) and ``failure_pages`` serves that file a page at a time (both
Django, like ``jobs``).
"""

from annotation.evaluation.correlation import (
    BOOTSTRAP_SAMPLES,
    BOTH_ITEMS,
    FIRST_COLUMN,
    QUERY_RULES,
    average_ranks,
    bootstrap_rows,
    bootstrap_spearman,
    pair_cosines,
    query_memberships,
    spearman,
)
from annotation.evaluation.inputs import (
    EvaluationError,
    RatedPairs,
    Space,
    SplitItems,
    embed_items,
    load_space,
    read_cxc_ratings,
    read_ratings_folder,
)
from annotation.evaluation.ranked import first_correct_ranks
from annotation.evaluation.ranks import Positives, retrieval_summary
from annotation.evaluation.report import evaluate
from annotation.evaluation.table import format_report

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "BOTH_ITEMS",
    "FIRST_COLUMN",
    "QUERY_RULES",
    "EvaluationError",
    "Positives",
    "RatedPairs",
    "Space",
    "SplitItems",
    "average_ranks",
    "bootstrap_rows",
    "bootstrap_spearman",
    "embed_items",
    "evaluate",
    "first_correct_ranks",
    "format_report",
    "load_space",
    "pair_cosines",
    "query_memberships",
    "read_cxc_ratings",
    "read_ratings_folder",
    "retrieval_summary",
    "spearman",
]
