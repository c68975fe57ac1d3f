"""``python -m derive`` is the ``derive`` command."""

import sys

from .cli import main

sys.exit(main())
