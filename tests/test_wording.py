"""``patent_demo.wording.counted``: one count, one noun, the plural only when it is not one."""

from patent_demo.wording import counted


def test_counted_singular_plural_and_thousands():
    assert counted(1, "document") == "1 document"
    assert counted(0, "document") == "0 documents"
    assert counted(2, "query", "queries") == "2 queries"
    assert counted(1, "query", "queries") == "1 query"
    assert counted(1204, "label") == "1,204 labels"
    assert counted(1, "document matches", "documents match") == "1 document matches"
