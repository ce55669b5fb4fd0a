"""Test-wide setup: make tests/ importable for helper modules such as reference_glob."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
