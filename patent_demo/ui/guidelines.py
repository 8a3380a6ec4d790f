"""The labelling guidelines beside the label keys: what each grade means here (``patent_demo.labels.guidelines``),
read by everyone, edited by whoever labels (by the admins only when ``--admin`` names some), every saved
version kept in the label store and exported with the labels."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from patent_demo.labels.guidelines import Guidelines, corpus_key
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.views import esc, warn

SUMMARY = (
    "Labelling guidelines: 1 relevant = X, alone against the query · 2 partly = Y, with another document · "
    "3 not relevant = at most A, background · open to read or edit"
)


class GuidelineHandlers:
    """``/guidelines`` (the text in force for the corpus served) and ``/save_guidelines``."""

    def __init__(self, lh: LabelHandlers) -> None:
        self.lh = lh
        self.corpus = corpus_key(lh.wb.corpus)

    def _shown(self, g: Guidelines) -> tuple[str, str, str]:
        by = (
            f"<small>In force for corpus <b>{esc(self.corpus)}</b>: {esc(g.provenance)} · every version is kept "
            "and exported with the labels (<code>guidelines.md</code>)</small>"
        )
        return g.text, by, g.text

    def show(self) -> tuple[str, str, str]:
        """The text in force, who saved it, and the same text in the edit box."""
        return self._shown(self.lh.store.guidelines(self.corpus))

    def save(
        self, text, annotator, request: gr.Request = None, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, str, str, str]:
        """A new version saved under the annotator's name (the login's, behind a login)."""
        try:
            who = self.lh.identity.who(annotator, request, profile)
            self.lh.identity.check_admin(who, "edit the labelling guidelines")
            before = self.lh.store.guidelines(self.corpus)
            g = self.lh.store.save_guidelines(self.corpus, text, who)
            msg = (
                "the text is the one in force already; nothing saved"
                if g == before
                else f"✓ saved as version {g.version} by {esc(who)}; labels from now on are read against it"
            )
            return (*self._shown(g), msg)
        except Exception as err:  # noqa: BLE001 - a refusal is said on the page, the text stays in the box
            return gr.update(), gr.update(), gr.update(), warn(err)


@dataclass
class GuidelinesPanel:
    """The accordion under the keys line: the text, who saved it, and the edit box."""

    text: gr.Markdown
    by: gr.Markdown
    edit: gr.Textbox
    save: gr.Button
    status: gr.Markdown

    @classmethod
    def build(cls, gh: GuidelineHandlers) -> GuidelinesPanel:
        shown, _, _ = gh.show()
        with gr.Accordion(SUMMARY, open=False, elem_id="l-guide"):
            text = gr.Markdown(shown, elem_id="l-guide-text", sanitize_html=True)
            by_line = gr.Markdown("", elem_id="l-guide-by")  # filled by the page load, with the box below
            with gr.Accordion("Edit the guidelines of this corpus", open=False, elem_id="l-guide-editor"):
                edit = gr.Textbox(
                    shown, lines=8, max_lines=30, label="Guidelines (Markdown)", elem_id="l-guide-edit"
                )
                with gr.Row():
                    save = gr.Button("Save guidelines", size="sm", elem_id="l-guide-save", scale=0)
                    status = gr.Markdown(elem_id="l-guide-status")
        return cls(text, by_line, edit, save, status)

    def wire(self, demo: gr.Blocks, gh: GuidelineHandlers, annotator: gr.Textbox) -> None:
        """Each page load reads the text in force (another annotator may have saved a version since) into the
        text and the edit box, and says who saved it: the who-line shows once the box holds the current text."""
        demo.load(gh.show, None, [self.text, self.by, self.edit], api_name="guidelines")
        self.save.click(
            gh.save,
            [self.edit, annotator],
            [self.text, self.by, self.edit, self.status],
            api_name="save_guidelines",
        )
