"""The campaign dashboard's numbers: pure statistics (stats, tables, snapshot), the reads
they come from (reads), the snapshot service and its selector."""
