"""The DSSDNet re-ranker trainer: ``main`` the command (``python -m train.dssdnet``), ``loop`` its step loop
(``fit``, the epochs), ``args`` its options, ``data`` the pair sources, evaluation and the frozen layers'
feature cache, ``report`` the citation report and the ablation ladder, ``scored`` the USPPM scored-pair runs."""
