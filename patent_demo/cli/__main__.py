import sys

from patent_demo.cli.main import main

sys.exit(main())
