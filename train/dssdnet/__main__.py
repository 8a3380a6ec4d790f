"""``python -m train.dssdnet``: the DSSDNet trainer (``train.dssdnet.main``)."""

import sys

from train.dssdnet.main import main

sys.exit(main())
