"""``python -m services.scoring``: run the scoring service (settings from the environment)."""

import sys

from services.scoring.main import main

sys.exit(main())
