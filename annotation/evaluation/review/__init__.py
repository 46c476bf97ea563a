"""The crowd's review of retrieval failures: an explained evaluation's failures queued as
pairs of kind REV (the query, the image it should have found, the one retrieved),
rated through the queue like any pair (N distinct raters, gold, exclusion), each review
with its marks; then the figures per failure, per mark and the Spearman correlation of
the human score with the concept metrics.

``marks`` (the marks' names and bits) and ``figures`` (the aggregation) are pure; the
Django side: ``queueing`` (queue a job's failures), ``reviewing`` (claim and submit a
review through the rating policy, its marks in the rating's transaction), ``report``
(the figures of a job's reviewed failures, for the API, the page and the CLI).
"""
