import os

import pytest
from checker_data import DATA

# The checker imports vLLM's argument parser; its INFO lines would drown the output.
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


@pytest.fixture
def guide_text() -> str:
    return (DATA / "community-guide-compose.yaml").read_text()
