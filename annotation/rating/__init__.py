"""Rating: the one policy every claim and submit passes (``policy``), the crowd quota it
counts (``quota``), the queue (``queue``) and the pair writes (``pairs``). The queue and
gold serving (``annotation.quality.gold``) are the policy's mechanisms; they import
nothing of the policy or the quota."""
