"""Text retrieval (DSSDNet): the BM25 first stage, the gated cross-encoder, text search and fusion.
The DSSDNet losses live in ``patent_demo.losses.dssdnet``."""
