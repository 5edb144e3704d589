"""``python -m rllib_fair.cli``."""

import sys

from rllib_fair.cli import main

sys.exit(main())
