import sys

from patent_demo.metrics.cli import main

sys.exit(main())
