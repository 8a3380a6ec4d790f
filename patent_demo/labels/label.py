"""One relevance judgement (``Label``) and the values its fields take: the grades, the search-report
categories, the result lists, the query kinds and the modality each judges (``patent_demo.labels.store``
keeps them; ``patent_demo.labels.exports`` writes them out)."""

from __future__ import annotations

from dataclasses import dataclass, field

from patent_demo.labels.fields import (
    LabelError,
    clean_codes,
    clean_figure,
    clean_id,
    clean_line,
    clean_note,
    clean_text,
    preview,
)

GRADES = {"relevant": 2, "partly": 1, "not": 0}
CATEGORIES = ("", "X", "Y", "A")
LISTS = ("hmcl", "bm25", "dense", "hybrid", "dssdnet", "fused", "rrf")  # rrf: the Combined tab's fusion
QUERY_KINDS = ("image", "text", "combined", "application")  # application: several views of one design
# query kind -> judged pair: an application's views against a whole patent judge the patent (qrels only)
MODALITIES = {"image": "drawing", "text": "text", "combined": "patent", "application": "patent"}


@dataclass
class Label:
    """One judgement of one candidate shown for one query."""

    annotator: str
    query_id: str
    query_kind: str
    candidate_id: str
    list_name: str
    rank: int
    score: float
    label: str
    query_text: str = ""
    query_codes: dict = field(default_factory=dict)
    query_image_sha: str = ""
    query_image_file: str = ""
    query_patent_id: str = ""
    query_figure: dict = field(default_factory=dict)  # a sheet search's query figure: name and box
    candidate_figure: str = ""
    checkpoint_id: str = ""
    category: str = ""
    note: str = ""
    adjudicated: bool = False
    modality: str = ""  # filled from query_kind by check()
    session_id: str = ""  # the app session that made it: only that session may undo it
    idempotency_key: str = ""  # a retried request with the same key stores once
    id: int | None = None
    created_at: str = ""
    undone: bool = False
    replayed: bool = field(default=False, compare=False)  # add() found the key already stored

    @property
    def grade(self) -> int:
        return GRADES[self.label]

    def check(self) -> None:
        """Validate every field and normalise the free text in place; raises ``LabelError``."""
        self.annotator = clean_line(self.annotator, "annotator")
        if not self.annotator:
            raise LabelError("annotator is empty: enter your name (or sign in) before labelling")
        for name in ("label", "category", "list_name", "query_kind"):
            if not isinstance(getattr(self, name), str):
                raise LabelError(
                    f"{name.replace('_', ' ')} must be text, got {type(getattr(self, name)).__name__}"
                )
        if self.label not in GRADES:
            raise LabelError(f"label {preview(self.label)} is not one of {sorted(GRADES)}")
        if self.category not in CATEGORIES:
            raise LabelError(f"category {preview(self.category)} is not one of X, Y, A or empty")
        if self.list_name not in LISTS:
            raise LabelError(f"list {preview(self.list_name)} is not one of {LISTS}")
        if self.query_kind not in QUERY_KINDS:
            raise LabelError(f"query kind {preview(self.query_kind)} is not one of {QUERY_KINDS}")
        modality = MODALITIES[self.query_kind]
        if self.modality and self.modality != modality:
            raise LabelError(
                f"a {self.query_kind} query judges {modality} pairs, not {preview(self.modality)}"
            )
        self.modality = modality
        if self.category and modality != "text":
            raise LabelError(
                f"the search-report category {self.category} applies to text hits only, not to a {modality} judgement"
            )
        if self.category in ("X", "Y") and self.label == "not":
            raise LabelError(
                f"category {self.category} marks a relevant document; it cannot go with 'not relevant'"
            )
        for name in (
            "query_id",
            "candidate_id",
            "query_image_sha",
            "query_image_file",
            "query_patent_id",
            "candidate_figure",
            "checkpoint_id",
            "session_id",
            "idempotency_key",
        ):
            setattr(self, name, clean_id(getattr(self, name), name.replace("_", " ")))
        if not self.query_id or not self.candidate_id:
            raise LabelError("a label needs a query and a candidate: run a search first")
        self.query_text = clean_text(self.query_text)
        self.query_codes = clean_codes(self.query_codes)
        self.query_figure = clean_figure(self.query_figure)
        self.note = clean_note(self.note)
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or not 1 <= self.rank <= 100_000:
            raise LabelError(f"rank must be a whole number from 1, got {self.rank!r}")
        try:
            self.score = float(self.score)
        except (TypeError, ValueError) as err:
            raise LabelError(f"score must be a number, got {self.score!r}") from err
