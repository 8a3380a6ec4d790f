"""Examiner labels as training rows (``data``: read, guarded against the test queries) and the shipped
drawing head retrained from them (``head``)."""
