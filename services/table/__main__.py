"""``python -m services.table``: run the table service (settings from the environment)."""

import sys

from services.table.main import main

sys.exit(main())
