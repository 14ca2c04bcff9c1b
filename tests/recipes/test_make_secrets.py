"""recipes/make_secrets.py, as the pages run it on the host: both secrets written once,
readable by their owner alone, and never replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "recipes" / "make_secrets.py"


def _run(home: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, SCRIPT],
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.splitlines()


def _refused(home: Path) -> str:
    """What the script says where it refuses, as one line and no traceback."""
    made = subprocess.run(
        [sys.executable, SCRIPT], env={**os.environ, "HOME": str(home)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == 1 and "Traceback" not in made.stderr, made.stderr
    return made.stderr


def test_both_secrets_are_written_for_their_owner_alone(tmp_path: Path) -> None:
    token, key = tmp_path / ".ray" / "auth_token", tmp_path / ".ray-serve-npu" / "api_key"
    assert _run(tmp_path) == [f"wrote {token}", f"wrote {key}"]
    for path in (token, key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # Ray's token: 32 random bytes in hex, as Ray's generator makes it.
    assert len(token.read_text().strip()) == 64
    int(token.read_text(), 16)
    # The key: 32 random bytes, URL-safe, which an HTTP header carries as is.
    assert len(key.read_text().strip()) == 43


def test_a_second_run_keeps_both_secrets(tmp_path: Path) -> None:
    _run(tmp_path)
    token, key = tmp_path / ".ray" / "auth_token", tmp_path / ".ray-serve-npu" / "api_key"
    before = token.read_text(), key.read_text()
    assert _run(tmp_path) == [f"kept {token}", f"kept {key}"]
    assert (token.read_text(), key.read_text()) == before


def test_what_cant_hold_a_secret_gets_the_fix(tmp_path: Path) -> None:
    # `docker run -v` makes a directory where the mounted file was missing.
    (tmp_path / ".ray" / "auth_token").mkdir(parents=True)
    made = _refused(tmp_path)
    assert f"rmdir {tmp_path / '.ray' / 'auth_token'}" in made
    (tmp_path / ".ray" / "auth_token").rmdir()
    _run(tmp_path)
    key = tmp_path / ".ray-serve-npu" / "api_key"
    key.chmod(0o644)
    made = _refused(tmp_path)
    assert f"chmod 600 {key}" in made


def test_a_link_or_an_empty_file_is_no_secret(tmp_path: Path) -> None:
    token = tmp_path / ".ray" / "auth_token"
    token.parent.mkdir(mode=0o700)
    token.symlink_to(tmp_path / "elsewhere")
    made = _refused(tmp_path)
    assert f"{token} is not a plain file" in made
    assert not (tmp_path / "elsewhere").exists()
    token.unlink()
    token.touch(mode=0o600)
    made = _refused(tmp_path)
    assert f"{token} is empty" in made
    # Nothing but the secrets is left in their directories.
    assert sorted(p.name for p in token.parent.iterdir()) == ["auth_token"]
