"""Relevance feedback measured on the residual collection: ``python -m train.feedback.drawings`` chooses
the drawing weights on validation and scores test once; ``python -m train.feedback.text`` measures the
text lists' feedback."""
