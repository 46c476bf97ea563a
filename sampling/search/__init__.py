"""Nearest-neighbour search: pure numpy and faiss, no Django.

``index`` (the configuration and the building blocks: cells, exact search, HNSW),
``pq`` (product quantization), ``shards`` (the cell-sharded self-join and its run folder),
``neighbours`` (the entry: every vector's nearest neighbours by the configured kind) and
``topk`` (top-k of a query set against a corpus).

Imports: nothing of the project.
"""
