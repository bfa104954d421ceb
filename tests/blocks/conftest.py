from __future__ import annotations

import sys
from pathlib import Path

# Lets the test modules import the shared custom providers as `custom_providers`.
sys.path.insert(0, str(Path(__file__).parent))
