"""The DSSDNet re-ranker trainer: ``main`` the command and its epoch loop (``python -m train.dssdnet``), ``args``
its options, ``data`` the pair sources and evaluation, ``cache`` the frozen layers' outputs, ``report`` the
citation report and the ablation ladder, ``scored`` the USPPM scored-pair runs."""
