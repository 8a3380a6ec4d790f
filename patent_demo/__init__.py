"""patent-demo: prior-art search over patent drawings (HMCL) and texts (BM25 + DSSDNet), with relevance labeling.

The core package never imports gradio, ``app`` or ``train``; those import it.
"""

__version__ = "0.1.0"
