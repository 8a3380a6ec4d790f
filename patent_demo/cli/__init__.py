"""``patent-demo``: build, describe, search and evaluate patent corpora from the command line.

Subcommands (each with ``--help``)::

    patent-demo corpus build --source {redbook,deeppatent2,images,text} SRC --out DIR
    patent-demo corpus info DIR
    patent-demo search drawings|text --corpus DIR --model NAME (--query FILE | --queries FILE) --k N [--run OUT]
    patent-demo evaluate drawings|text --corpus DIR --model NAME [--against NAME] [--qrels FILE] [--json OUT]
    patent-demo qrels convert FILE... --out QRELS
    patent-demo models

Every failure the user can fix ends in one line on stderr and exit status 2, never a traceback.
"""

from patent_demo.cli.main import main

__all__ = ["main"]
