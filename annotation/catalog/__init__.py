"""The catalog: datasets, splits, images, captions and embedding spaces.

``karpathy`` (parsing a Karpathy-split file, read as a stream by ``json_stream``),
``services`` (the imports of a dataset and of an embedding space), ``image_files`` (a
dataset's picture files: that they exist, their sizes as a browser shows them), ``coco_objects`` and
``objects`` (reading a COCO instances file as a stream, and importing its object
annotations into a dataset's images), ``selectors`` (their
reads), ``uploads`` (storing uploaded files), ``upload_limits`` (the size limits of each
kind of upload), ``upload_cleanup`` (removing a finished run's uploads) and ``tasks``
(the beat's prune).

Imports: ``annotation.core``, ``annotation.models`` and ``sampling.embeddings`` (reading
vector files); nothing above it (runs, serving, quality, people, rating, entry points).
"""
