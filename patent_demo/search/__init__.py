"""The searches: a request (``patent_demo.request``) in, hits and the notes of the status line out. The
Workbench runs them (``Workbench.search_drawing``, ``search_application``, ``search_text``); they call the
Workbench and the corpus only through their public methods.

* ``scope``: what a search may return (the cut-off, the query's own patents and families left out);
* ``drawing``: one drawing or an application's views against the drawing index;
* ``sheet``: a sheet split into its figures, each searched, ranked together;
* ``text``: the text lists (BM25, dense, hybrid, DSSDNet, fused) inside the filters and the search syntax;
* ``feedback``: the relevance-feedback rule (Rocchio on the stored vectors), one home for the app, the CLI
  and the evaluation;
* ``refine``: a search ranked again with the examiner's labels of it (``feedback`` applied to the search on
  screen).
"""
