"""The HMCL drawing trainer: ``main`` the command (``python -m train.hmcl``), ``loop`` the step loop, ``data`` the
drawing sources (and the USPC split), ``features`` the encoder feeds and the cached-trunk run, ``heads`` the
linear heads on the packaged trunk, ``labels`` the Locarno classes derived from titles."""
