"""The campaign dashboard's numbers: pure tables (tables, pace), the reads they come
from (reads, pgcopy), the snapshot service and its selector, the speed floor's marks and
the tasks that refresh them.

Imports: the export's blocks, ``annotation.quality`` and below; only entry points import it.
"""
