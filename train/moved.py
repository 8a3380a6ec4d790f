"""Where the earlier training modules went: ``python -m train.<old>`` (or ``import train.<old>``) fails
with the command (or module) to use instead. ``train/__init__.py`` installs :class:`MovedFinder`.

==========================  ================================================================================
earlier                     now
==========================  ================================================================================
``train.hmcl_real``         ``python -m train.hmcl --sources uspc deeppatent2 generated ...`` (the configs
                            ``train/configs/hmcl-real*.json`` name these sources: same flags otherwise)
``train.hmcl_runner``       ``python -m train.sweep hmcl ...`` (same flags)
``train.hmcl_real_runner``  ``python -m train.sweep hmcl --config train/configs/hmcl-real.json ...``
``train.hmcl_uspc``         ``python -m train.hmcl_heads ...`` (same flags)
``train.hmcl_uspc_data``    ``python -m train.hmcl_heads --corpus C --image-size S --views V --variants zero-shot``
``train.dssdnet_runner``    ``python -m train.sweep dssdnet ...`` (``--json F.json --md F.md``: ``--table F``)
``train.hmcl_data``         modules ``train.hmcl_features``, ``train.hmcl_loop``, ``train.hmcl_sources``
``train.hmcl_real_data``    modules ``train.hmcl_features``, ``train.hmcl_sources``
``train.dssdnet_eval``      module ``train.dssdnet_data`` (``evaluate``, ``write_run``, ``eval_description``)
==========================  ================================================================================
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery

MOVED: dict[str, str] = {
    "hmcl_real": "python -m train.hmcl --sources uspc deeppatent2 generated ... (train/configs/hmcl-real.json "
    "names these sources; every other flag is the same)",
    "hmcl_runner": "python -m train.sweep hmcl ... (the same flags)",
    "hmcl_real_runner": "python -m train.sweep hmcl --config train/configs/hmcl-real.json ... (the same flags)",
    "hmcl_uspc": "python -m train.hmcl_heads ... (the same flags)",
    "hmcl_uspc_data": "python -m train.hmcl_heads --corpus CORPUS --image-size SIZE --views VIEWS --variants "
    "zero-shot (fills the same trunk-feature cache); in code: train.hmcl_features.trunk_features",
    "dssdnet_runner": "python -m train.sweep dssdnet ... (the same flags; --json F.json --md F.md become --table F)",
    "hmcl_data": "the modules train.hmcl_features (TrainFigures, StepBatches, text_tower_features), "
    "train.hmcl_loop (TrainModule) and train.hmcl_sources (load_corpus, shuffle_labels, patent_text)",
    "hmcl_real_data": "the modules train.hmcl_features (SplitTower, view_cache, eval_cache, text_cache) and "
    "train.hmcl_sources (Item, uspc_items, deeppatent2_items, validation_items, shuffle_hierarchy)",
    "dssdnet_eval": "the module train.dssdnet_data (evaluate, write_run, eval_description, fmt)",
}


def message(old: str) -> str:
    return f"train.{old} is gone; use {MOVED[old]}"


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, old: str) -> None:
        self.old = old

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:  # import train.<old>
        raise ImportError(message(self.old), name=f"train.{self.old}")

    def get_code(self, fullname: str):  # python -m train.<old>: print the new command and exit 2
        text = message(self.old)
        return compile(
            f"import sys\nsys.stderr.write({text!r} + '\\n')\nsys.exit(2)\n", f"<{fullname}>", "exec"
        )


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds only the earlier module names of ``MOVED`` (every other name is left to the normal finders)."""

    def find_spec(self, fullname: str, path=None, target=None):
        prefix, _, old = fullname.partition(".")
        if prefix != "train" or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(old))


def install() -> None:
    import sys

    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
