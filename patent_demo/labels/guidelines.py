"""Labelling guidelines: what each grade means in this workbench, one text per corpus.

The default text follows the categories of a search report (X: relevant alone, Y: relevant combined with
another document, A: background). A corpus's text can be edited in the app; every version is kept in the
label store (``LabelStore.save_guidelines``) with who saved it and when, never overwritten, so that a label
can be read against the text its annotator saw. The export writes the text in force and its earlier versions
beside the labels (``guidelines.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from patent_demo.labels.fields import LabelError, clean_line, clean_note

MAX_GUIDELINES_CHARS = 8_000

DEFAULT_TEXT = """\
**Relevant · key 1 · grade 2 — would be cited as X.** The hit on its own shows what the query shows: for a \
drawing, a design with the same overall impression (the same kind of article, the same shape and the \
features that make the design); for a text, every feature of the query's abstract or main claim. Alone, it \
would take away novelty or show the query to be obvious.

**Partly relevant · key 2 · grade 1 — would be cited as Y.** The hit shows an essential part of the query, \
most of its features but not all, or the same design on a different article: it counts against the query \
when combined with another document of the same kind.

**Not relevant · key 3 · grade 0 — at most A.** The same field or general background (A), or unrelated.

- Judge what the document shows, not its rank, its score or its date: the prior-art cut-off (the E and P \
marks) is the filter's business, not the label's.
- A design is judged by its drawings: solid lines are claimed, broken lines only show the surroundings.
- Unsure between two grades: take the lower one and say why in the note.
- For a text hit, set the search-report category (X, Y, A) when it differs from the grade's.\
"""


@dataclass(frozen=True)
class Guidelines:
    """One version of a corpus's guidelines; ``version`` 0 is the built-in default (never saved)."""

    corpus: str
    text: str
    version: int = 0
    edited_by: str = ""
    edited_at: str = ""

    @property
    def provenance(self) -> str:
        """ "version 2, saved by alice on 2026-12-07 18:02 UTC" or "the default text (never edited)"."""
        if not self.version:
            return "the default text (never edited)"
        return f"version {self.version}, saved by {self.edited_by} on {self.edited_at[:16].replace('T', ' ')} UTC"


def default(corpus: str) -> Guidelines:
    return Guidelines(corpus, DEFAULT_TEXT)


def corpus_key(corpus) -> str:
    """The name guidelines are kept under: the corpus's name, else its folder's."""
    return clean_line(getattr(corpus, "name", "") or corpus.root.name, "corpus name")


def clean_guidelines(text) -> str:
    """The text as stored: several lines, no control characters, at most ``MAX_GUIDELINES_CHARS``, not empty."""
    out = clean_note(text, "the guidelines", MAX_GUIDELINES_CHARS)
    if not out:
        raise LabelError("the guidelines are empty; write what each grade means (or keep the default text)")
    return out


def guidelines_markdown(versions: list[Guidelines], corpus: str) -> str:
    """The export's ``guidelines.md``: the text in force for ``corpus`` (the last of ``versions``, else the
    default), then every earlier one, newest first, down to the default the first labels were made under."""
    current = versions[-1] if versions else default(corpus)
    parts = [
        f"# Labelling guidelines: {corpus}\n",
        f"In force: {current.provenance}.\n",
        current.text.strip() + "\n",
    ]
    if versions:
        parts.append("## Earlier versions (a label's time says which one its annotator saw)\n")
        for g in [*reversed(versions[:-1]), default(corpus)]:
            parts += [f"### {g.provenance}\n", g.text.strip() + "\n"]
    return "\n".join(parts)
