"""``python -m derive.fuzz --seed N --proofs M``: fuzz the kernel for as long as M proofs take."""

import sys

from .harness import main

sys.exit(main())
