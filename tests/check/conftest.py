import pytest
from checker_data import DATA


@pytest.fixture(autouse=True)
def quiet_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker imports vLLM's argument parser; its INFO lines would drown the output.

    Set per test, not for the session: servers that later tests start inherit this
    process's environment and must log as they normally do.
    """
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "ERROR")


@pytest.fixture
def guide_text() -> str:
    return (DATA / "community-guide-compose.yaml").read_text()
