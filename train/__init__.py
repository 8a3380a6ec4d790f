"""The training and evaluation commands (``python -m train.<name>``); they import ``patent_demo``, never the
reverse."""
