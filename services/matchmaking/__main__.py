"""``python -m services.matchmaking``: run the matchmaking service (settings from the environment)."""

import sys

from services.matchmaking.main import main

sys.exit(main())
