"""The examiner workbench: ``python app.py`` (or ``make demo``, or a Hugging Face Space) serves the Gradio
UI of ``patent_demo.ui`` on port 7860; ``python app.py --help`` lists the flags."""

import sys

from patent_demo.ui import build_demo, launch_kwargs, main

__all__ = ["build_demo", "launch_kwargs", "main"]

if __name__ == "__main__":
    sys.exit(main())
