"""On a fake tier, the pages' blocks find the tier's API key where the pages keep theirs."""

from __future__ import annotations

import runpy
import stat
import subprocess
from pathlib import Path

from ray_serve_npu_tooling.harness.scenario import API_KEY_FILE, reader_home

ROOT = Path(__file__).resolve().parents[2]


def test_the_key_file_holds_the_tiers_key_for_its_owner_alone(tmp_path: Path) -> None:
    home = reader_home(tmp_path, "the-tiers-key")
    key_file = home / API_KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # The page's own reading line, run with this home, exports the tier's key.
    read = subprocess.run(
        ["bash", "-c", 'OPENAI_API_KEY="$(cat ~/.ray-serve-npu/api_key)"; '
         'export OPENAI_API_KEY; printf %s "$OPENAI_API_KEY"'],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert read.stdout == "the-tiers-key"


def test_the_pages_write_and_read_the_file_the_harness_seeds() -> None:
    # docs/npu-ascend.md writes the key once on the host (recipes/make_secrets.py) and
    # reads it in every shell; the container mounts the same file.
    page = (ROOT / "docs" / "npu-ascend.md").read_text()
    written = page.split("% __secrets_start__", 1)[1].split("% __secrets_end__", 1)[0]
    read = page.split("% __api_key_start__", 1)[1].split("% __api_key_end__", 1)[0]
    assert "python3 make_secrets.py" in written
    secrets = runpy.run_path(str(ROOT / "recipes" / "make_secrets.py"))["SECRETS"]
    assert Path.home() / API_KEY_FILE in secrets
    assert f'OPENAI_API_KEY="$(cat ~/{API_KEY_FILE})"\nexport OPENAI_API_KEY' in read
    assert f'-v "$HOME/{API_KEY_FILE}":/root/{API_KEY_FILE}:ro' in page
