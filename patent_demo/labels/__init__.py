"""The labelling loop: the label store and its exports, per-browser sessions, annotator agreement and
the retraining report."""
