"""Counts in words: ``counted(1, "document")`` is "1 document", ``counted(1204, "query", "queries")`` is
"1,204 queries" -- one home for the plural of every count the app, the reports and the CLI print."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` with its noun, singular for exactly one, thousands separated."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"
