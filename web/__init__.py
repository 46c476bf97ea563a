"""The web server runtime and nothing else: the granian entry (``serve``), the WSGI entries
(``wsgi``: Django's; ``rating_wsgi``: the rating cycle's shortcut; ``served_wsgi``: the
served process's), keep-alive and the WSGI environ. No app imports it.
"""
