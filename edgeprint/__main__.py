"""``python -m edgeprint``: the same entry point as the ``edgeprint`` script."""

import sys

from edgeprint.cli import main

sys.exit(main())
