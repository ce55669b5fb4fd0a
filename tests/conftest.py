"""Test-wide setup: make tests/ importable for helper modules such as reference_glob.

The run keeps its sandbox readiness verdicts (sandbox/_probe_cache.py) in a
directory of its own, so it neither trusts a verdict an earlier run or the
developer's own use left behind, nor leaves one.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

_RUNTIME = tempfile.mkdtemp(prefix="codeward-test-runtime-")
os.environ["XDG_RUNTIME_DIR"] = _RUNTIME
atexit.register(shutil.rmtree, _RUNTIME, ignore_errors=True)
