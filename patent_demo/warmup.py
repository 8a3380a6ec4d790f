"""Warm-up in the background: every drawing model's index (the default model first), BM25 and the figure
hashes are built in a daemon thread while the app already answers; ``status`` says what is still building."""

from __future__ import annotations

import threading

from patent_demo.workbench import Workbench


class WarmUp:
    def __init__(self, workbench: Workbench) -> None:
        self.wb = workbench
        self.thread: threading.Thread | None = None

    def start(self) -> WarmUp:
        self.thread = threading.Thread(target=self.wb.warm_up, kwargs={"every_model": True}, daemon=True,
                                       name="warm-up")  # fmt: skip
        self.thread.start()
        return self

    def status(self) -> str:
        """``""`` once every drawing model's index is ready (or no warm-up runs), else a line naming those
        still being built."""
        ready = self.wb.ready_models()
        pending = [m.label for m in self.wb.models("drawing") if m.key not in ready]
        if self.thread is None or not self.thread.is_alive() or not pending:
            return ""
        return (
            f"⏳ building the drawing index of {', '.join(pending)}; a search with it waits until it is ready"
        )
