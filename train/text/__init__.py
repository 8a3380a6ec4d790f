"""The text first stage: ``biencoder`` fine-tunes the dense encoder, ``split`` draws the text splits, ``evaluate``
scores the first-stage lists, ``rerank_eval`` a re-ranker on the hybrid pool, ``report`` writes the text report."""
