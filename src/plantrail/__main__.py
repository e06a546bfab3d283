"""``python -m plantrail`` runs the ``plantrail`` command."""

import sys

from plantrail.cli.entry import main

sys.exit(main())
