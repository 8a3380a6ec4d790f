"""The workbench UI (Gradio): the only code of the project that imports gradio.

The rule: ``patent_demo.ui`` is the only package that imports ``gradio`` (the tests and the benchmarks may
use ``gradio`` and ``gradio_client`` to drive it); nothing else in ``patent_demo`` imports
``patent_demo.ui``; ``app.py`` stays the entry point that a Space and ``make demo`` run and only calls
into this package. ``tests/test_architecture.py`` checks it, with no import circle and no module over
600 lines.

Modules, in the order a request meets them:

* ``serve``: ``main`` (the flags of ``python app.py``, the label store, the workbench, ``launch``) and
  ``launch_kwargs``; ``args``: the flags and their environment variables.
* ``blocks``: ``build_demo``, the page: one builder per part, each laying out its components and wiring
  its events (``tabs_search``: Drawing, Text, Combined; ``tabs_review``: Embedding map, Error analysis,
  Export, Training, Agreement; ``panel``: the label panel); ``events``: what the parts share (the session
  and its owner check, the cursor's refresh).
* ``handlers``: the search handlers (drawing, application, text, combined), with ``review``'s for the
  maps, the evaluation, the comparison and training; ``examiner``: the filter panel, crop, sheets, the
  whole record, side by side, the search report; ``labelling``: the one cursor, labels, undo, export,
  agreement and adjudication; ``views``: what they show (escaped text, ⚠️ lines, tables, cursor lines).
* ``inputs``: what a request carries, checked before any work; ``access``: who acts (sign-in, login,
  admins), who owns a session, lenient inputs, the private folder of served files.

The search filters travel as one value: the panel's fields make one JSON object
(``patent_demo.filters.Filters``), which every search endpoint takes as one parameter.
"""

from patent_demo.ui.blocks import build_demo
from patent_demo.ui.serve import launch_kwargs, main

__all__ = ["build_demo", "launch_kwargs", "main"]
