"""Plain helpers shared by the test files and the benchmarks (the fixtures are in ``tests/conftest.py``):

* ``tiny``: a tiny corpus and workbench that need no weights;
* ``reranker``: a tiny random re-ranker of any variant, and a query with five candidates;
* ``live``: requests to a served app through ``gradio_client``, and what one costs the process;
* ``browser``: the chromium the browser tests drive, and the steps several of them share.
"""
