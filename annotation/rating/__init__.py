"""Rating: the one policy every claim and submit passes (``policy``) and the crowd quota
it counts (``quota``). The queue (``annotation.rating.queue``) and gold serving
(``annotation.quality.gold``) are its mechanisms; they import nothing from here."""
