"""`python -m gpupilot.cli`."""

import sys

from gpupilot.cli.main import main

sys.exit(main())
