"""``python -m codeward`` is the ``codeward`` command."""

import sys

from .cli import main

sys.exit(main())
