"""`python -m nodeconf` runs the command line."""

import sys

from nodeconf.cli.main import main

sys.exit(main())
