import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The package may not be installed in the test venv; import it from the tree.
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

DATA = Path(__file__).parent / "data"


@pytest.fixture
def guide_text() -> str:
    return (DATA / "community-guide-compose.yaml").read_text()
