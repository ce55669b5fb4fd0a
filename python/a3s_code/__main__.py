"""``python -m a3s_code`` is the ``a3s-code`` command."""

import sys

from .cli import main

sys.exit(main())
