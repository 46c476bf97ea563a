"""Why a model failed a retrieval query: explainable metrics over the objects annotated in
the ground-truth image and the image retrieved in its place.

Owns the caption-to-corpus ranking and its failure set, the concept metrics (concept
agreement, non-common concept similarity, concept enumeration, size disagreement, each
query-agnostic and query-informed), their matchings, the local explanation text, and the
WordNet tables they read (``data/``: built offline by scripts/build_wordnet_tables.py from
WordNet 3.1, with WordNet's licence beside them).

Modules: ``ranking`` (queries ranked against the images' corpora, the failure set, its
figures), ``vocabulary`` (the tables: categories, the terms naming them, path similarity,
adjective antonyms), ``matching`` (optimal assignments), ``concepts`` (the metrics),
``explanation`` (one failure explained, both forms, and its sentences).

Imports: numpy, scipy and the standard library only; no Django, no nltk.
"""
