"""Tests for patent_demo.prior_art: the rule on hand-made cases (published before; filed before and
published after = E; filed after; undated; non-patent literature), the cut-off date of a patent's own
search, and the marks a result list carries."""

from __future__ import annotations

import pytest

from patent_demo import prior_art
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.filters import SearchFilter, split_prior_art

D = "2015-06-01"  # the cut-off of every case

CASES = {
    # id: (record, status, admitted)
    "published-before": (Patent("US1", "utility", date="2014-01-01", filing_date="2012-01-01"), "published"),
    "E": (Patent("US2", "utility", date="2016-03-01", filing_date="2014-05-01"), "E"),
    "E-by-priority": (
        Patent("US3", "utility", date="2017-01-01", filing_date="2015-09-01", priority_date="2015-02-01"),
        "E",
    ),
    "filed-after": (Patent("US4", "utility", date="2017-01-01", filing_date="2015-06-01"), "later"),
    "published-on-the-day": (Patent("US5", "utility", date="2015-06-01"), "later"),
    "undated": (Patent("US6", "utility"), "undated"),
    "npl-before": (Patent("NPL7", "npl", date="2015-05-31"), "published"),
    "npl-after-filed-before": (Patent("NPL8", "npl", date="2016-01-01", filing_date="2014-01-01"), "later"),
    "filed-before-unpublished": (Patent("US9", "utility", filing_date="2014-01-01"), "E"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rule_on_hand_made_cases(case):
    patent, want = CASES[case]
    assert prior_art.status(patent, D) == want
    assert prior_art.admits(patent, D) == (want in ("published", "E"))
    assert prior_art.mark(patent, D) == ("E" if want == "E" else "")
    f = SearchFilter.parse(before=D)
    assert f.admits(patent) == prior_art.admits(patent, D)  # the filter panel applies the same rule
    assert prior_art.status(patent, "") == "published"  # no cut-off: nothing hidden


def test_reasons_say_why_a_document_is_not_prior_art():
    assert prior_art.reason(CASES["filed-after"][0], D) == (
        "not prior art: published 2017-01-01, filed 2015-06-01, on or after the cut-off 2015-06-01"
    )
    assert prior_art.reason(CASES["published-on-the-day"][0], D) == (
        "not prior art: published 2015-06-01, on or after the cut-off 2015-06-01"
    )
    assert prior_art.reason(CASES["undated"][0], D) == "no date: neither published nor filed on record"
    assert prior_art.reason(CASES["undated"][0], D, keep_undated=True) == ""
    assert prior_art.admits(CASES["undated"][0], D, keep_undated=True)
    assert not prior_art.admits(CASES["filed-after"][0], D, keep_undated=True)  # dated: the rule decides
    assert prior_art.reason(CASES["E"][0], D) == ""


def test_the_own_date_is_the_filing_date_else_the_earliest_priority_else_publication():
    assert prior_art.OWN_DATE == "filing"
    assert prior_art.prior_art_date(CASES["E-by-priority"][0]) == "2015-09-01"
    assert prior_art.prior_art_date(CASES["E"][0]) == "2014-05-01"
    assert prior_art.prior_art_date(Patent("US13", priority_date="2009-01-01")) == "2009-01-01"
    assert prior_art.prior_art_date(Patent("US10", date="2001-01-01")) == "2001-01-01"
    # a priority recorded after the filing (a data error) does not move the date later
    assert prior_art.effective_filing_date(
        Patent("US11", filing_date="2010-01-01", priority_date="2011-01-01")
    ) == ("2010-01-01")
    assert prior_art.effective_filing_date(CASES["npl-after-filed-before"][0]) == ""
    assert prior_art.prior_art_date(Patent("US12")) == ""


def test_the_intermediate_window_runs_from_the_earliest_priority_to_the_filing_date():
    query = CASES["E-by-priority"][0]  # priority 2015-02-01, filed 2015-09-01
    assert prior_art.intermediate_from(query) == "2015-02-01"
    assert prior_art.intermediate_from(CASES["E"][0]) == ""  # no priority claim: no window
    assert (
        prior_art.intermediate_from(Patent("US11", filing_date="2010-01-01", priority_date="2011-01-01"))
        == ""
    )
    before, start = prior_art.prior_art_date(query), prior_art.intermediate_from(query)
    by_date = {
        "2015-01-31": "",  # published before the priority date: plain prior art
        "2015-02-01": "P",  # on the priority date: intermediate
        "2015-08-31": "P",
        "2015-09-01": "",  # on the filing date: not prior art at all
    }
    for date, want in by_date.items():
        doc = Patent("X", date=date)
        assert prior_art.mark(doc, before, start) == want, date
        assert prior_art.report_category(doc, query) == want, date
    # an earlier application stays E whatever the window
    e = Patent("Y", date="2016-01-01", filing_date="2015-03-01")
    assert prior_art.mark(e, before, start) == "E" == prior_art.report_category(e, query)
    # no window without the query's priority: a typed cut-off marks E only
    assert prior_art.mark(Patent("X", date="2015-05-01"), before) == ""
    f = SearchFilter.parse(before=D).with_before(before, start)
    assert (f.before, f.intermediate_from) == (before, start)
    assert all(f.admits(p) == prior_art.admits(p, before) for p, _ in CASES.values())  # admits the same


def test_marks_and_the_undated_count_over_a_list():
    corpus = Corpus(root=".", patents=[p for p, _ in CASES.values()], name="t")
    ids = [p.id for p, _ in CASES.values()]
    extras = prior_art.marked_extras(ids, [{"figure_id": i} for i in ids], corpus, D)
    assert [e.get("prior_art", "") for e in extras] == ["E" if w == "E" else "" for _, w in CASES.values()]
    assert extras[0] == {"figure_id": "US1"}
    assert prior_art.marked_extras(["US1"], None, corpus, D) is None  # nothing to mark: extras untouched
    assert prior_art.marked_extras(["US2"], None, corpus, "") is None
    assert prior_art.count_undated(corpus, D) == 1
    assert prior_art.count_undated(corpus, "") == 0
    keep, apart = split_prior_art(ids, corpus, D)
    assert [ids[i] for i in keep] == ["US1", "US2", "US3", "NPL7", "US9"]
    assert [ids[i] for i in apart] == ["US4", "US5", "US6", "NPL8"]
