"""``python -m replica`` runs ``replica-sweep``."""

import sys

from .workflow.cli import sweep_main

sys.exit(sweep_main())
