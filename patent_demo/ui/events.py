"""What the parts of the page share when they wire their events: ``Shared``, the page-wide components (the
browser session and its owner token, the crop of the query drawing, the annotator, the filter value), whose
``mine`` makes an event that reads the session owner-checked; and ``Cursor``, whose ``then_show`` ends an
event with the refresh of every view that follows the cursor (``labelling.LabelHandlers.show``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import gradio as gr

from patent_demo.ui.access import owned
from patent_demo.ui.inputs import Selection
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.views import cursor_marker

QUIET = {"api_visibility": "private"}  # an event that is no endpoint of the API


class Models(NamedTuple):
    """The model choices of the page's dropdowns, read once per page build (``Workbench.models`` rescans)."""

    drawing: list[tuple[str, str]]  # (label, key)
    drawing_default: str
    text: list[tuple[str, str]]


@dataclass
class Shared:
    """The page-wide components every tab may read."""

    session: gr.State
    owner_token: gr.BrowserState  # this browser's proof of its session (``access.bind_owner``)
    crop_state: gr.State  # the examiner's crop of the query drawing (PIL) or None
    annotator: gr.Textbox
    filters: gr.JSON  # the filter panel's fields as one value (``examiner.FilterPanel``)

    def mine(self, fn: Callable, inputs: list, outputs: list) -> dict[str, Any]:
        """An event that reads the session: refused to a request without this browser's token."""
        return {
            "fn": owned(fn, outputs),
            "inputs": inputs,
            "outputs": outputs,
            "inputs_kwargs": {"owner_token": self.owner_token, "owner_session": self.session},
        }


@dataclass
class Cursor:
    """The one cursor's wiring: every event that moves it, or changes what it shows, ends with the refresh
    of every view that follows it (``then_show``)."""

    shared: Shared
    labels: LabelHandlers
    list_name: gr.Radio  # the label panel's list, rank, cursor line, progress and "show unlabelled only"
    rank: gr.Number
    line: gr.Markdown
    progress: gr.Markdown
    unlabelled: gr.Checkbox
    views: list  # every view that follows the cursor (``LabelHandlers.show``'s outputs)
    # the panels that show one hit of a search (record, side by side, explanation) and what they show
    # before any hit is opened: a new search resets them (``fresh``)
    panels: dict = field(default_factory=dict)
    marker: Any = None  # the label panel's cursor marker (``views.cursor_marker``) the key queue reads

    @property
    def show_in(self) -> list:
        return [self.shared.session, self.list_name, self.rank, self.unlabelled, self.shared.annotator]

    @property
    def searched(self) -> list:
        """What a search returns after its own outputs: the session and the cursor on its first hit."""
        return [self.shared.session, self.list_name, self.rank, self.line, self.progress]

    @property
    def picked(self) -> list:
        """What a click on a hit returns: the cursor's list, rank and line."""
        return [self.list_name, self.rank, self.line]

    def mine(self, fn: Callable, inputs: list, outputs: list) -> dict[str, Any]:
        return self.shared.mine(fn, inputs, outputs)

    def search(self, fn: Callable, inputs: list, outputs: list) -> dict[str, Any]:
        """A search's event (``mine``) whose outputs end with ``searched``: its answer also carries the cursor
        marker of the new list, so a key pressed as soon as the hits show binds to them."""

        @functools.wraps(fn)
        def marked(*args, **kwargs):
            out = fn(*args, **kwargs)
            session, list_name, rank = out[-5], out[-4], out[-3]
            ok = isinstance(session, dict) and isinstance(list_name, str) and isinstance(rank, int)
            return (
                *out,
                cursor_marker(session, list_name, rank, None) if ok else cursor_marker(None, "", 1, None),
            )

        return self.mine(marked, inputs, [*outputs, self.marker])

    def then_show(self, event):
        """``event``, then the refresh of every view that follows the cursor. A refresh asked for while one
        is still running runs again once it ends (``always_last``): by Gradio's default a second would be
        dropped, and the views would keep what the first read before the later label or move."""
        return event.then(
            **self.mine(self.labels.show, self.show_in, self.views), trigger_mode="always_last", **QUIET
        )

    def fresh(self, event):
        """``event`` (a search starting) resets the panels of a hit (``panels``): none shows a hit of the search
        it replaces."""
        values = tuple(self.panels.values())
        return event.then(
            lambda: values if len(values) != 1 else values[0],
            None,
            list(self.panels),
            show_progress="hidden",
            trigger_mode="always_last",  # a link of the search's chain: never dropped (``then_show``)
            **QUIET,
        )

    def searched_then_show(self, event):
        """A search's event: the hit panels reset (``fresh``), then every view that follows the cursor."""
        return self.then_show(self.fresh(event))

    def select(self, component, list_name: str, api_name: str):
        """A click on a hit of ``component`` (a view of the list ``list_name``) puts the cursor on it."""
        labels = self.labels

        def select(session, evt: Selection):  # the marker with the cursor, for a key pressed at once
            out = labels.select(list_name, session, evt)
            moved = isinstance(out[1], int)
            return (*out, cursor_marker(session, list_name, out[1], None) if moved else gr.update())

        return self.then_show(
            component.select(
                **self.mine(select, [self.shared.session], [*self.picked, self.marker]), api_name=api_name
            )
        )
