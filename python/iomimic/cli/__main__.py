"""`python -m iomimic.cli`: the same as the `iomimic` command."""

import sys

from iomimic.cli import main

sys.exit(main())
