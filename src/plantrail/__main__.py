"""``python -m plantrail`` runs the ``plantrail`` command."""

import sys

from plantrail.cli.main import main

sys.exit(main())
