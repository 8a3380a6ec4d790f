"""The training and evaluation commands (``python -m train.<name>``); they import ``patent_demo``, never the
reverse. Earlier command names fail with the one to type instead (``train.moved``)."""

from train.moved import install

install()
