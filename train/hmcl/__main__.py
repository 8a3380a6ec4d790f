"""``python -m train.hmcl``: the HMCL trainer (``train.hmcl.main``)."""

import sys

from train.hmcl.main import main

sys.exit(main())
