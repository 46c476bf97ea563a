"""Gold pairs: reference-scored pairs, their files (``gold_file``: the checks), uploads
(``upload``, ``staging``: preview, save, cancel). Serving them inside the normal queue at a
per-dataset rate, their ratings kept apart from the dataset's, and the automatic pause a
large gold error triggers are ``annotation.serving``'s (``gold``, ``pauses``)."""
