"""The MCP suites run real servers: hostile scripts, the Python SDK's, and two from npm."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
