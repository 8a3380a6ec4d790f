"""The head every bench's JSON record starts with: the exact command that wrote it, the CPU it ran on (by
name: CPUs differ between machines), its cores, Python and the load average when it ended."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from patent_demo.text.precision import cpu_name


def machine_record(script: str, argv: list[str] | None, **figures) -> dict:
    """``{"command", "cpu", "cores", "python", **figures, "load_average_at_end"}`` of ``bench/<script>`` run
    with ``argv`` (``sys.argv[1:]`` when None)."""
    args = argv if argv is not None else sys.argv[1:]
    return {
        "command": " ".join(["python", f"bench/{script}", *args]),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        **figures,
        "load_average_at_end": os.getloadavg(),
    }


def write_record(path: str | Path, record: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
