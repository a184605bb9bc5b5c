"""``python -m services.wallet``: run the wallet service until SIGTERM."""

import sys

from services.wallet.main import main

sys.exit(main())
