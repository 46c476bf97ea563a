"""Excluding a rater's ratings with top-up to N, and undoing it.

``services`` holds the decisions (create, apply, undo, resume); ``chunks`` the writes of
one chunk of pairs; ``selectors`` the reads for pages and the API."""
