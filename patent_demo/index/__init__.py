"""The vector index drawings and texts both search: ``dense.py`` (``DenseIndex`` over FAISS, exact and
approximate kinds, per-patent search), ``aggregate.py`` (a patent scores its best figure; exact
re-scoring), ``faiss_kinds.py`` (each kind's parameters and threads) and ``scale.py`` (the kind a
collection's size gets, from the measured ``scale_table.json``; one index merged from shards)."""
