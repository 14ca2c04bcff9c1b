"""Write the two secrets the recipes read, each to a file only you can read.

- Ray's token, in Ray's default token file (``~/.ray/auth_token``): every Ray process of
  the cluster refuses a call without it. 32 random bytes in hex, as Ray's own generator
  makes them.
- The app's API key (``~/.ray-serve-npu/api_key``): clients send it as
  ``Authorization: Bearer <key>``; the plugin takes it from ``RAY_SERVE_NPU_API_KEY``.

A file that exists is kept, never overwritten: run again, the script changes nothing, so
it can't replace the token of a cluster that is running. To replace a secret, delete its
file first (docs/npu-ascend.md, "Rotate Ray's token").

Run it on the host with the standard library's Python: ``python3 make_secrets.py``.
"""

# __secrets_start__
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

SECRETS = {
    Path.home() / ".ray" / "auth_token": lambda: secrets.token_hex(32),
    Path.home() / ".ray-serve-npu" / "api_key": lambda: secrets.token_urlsafe(32),
}


def write_once(path: Path, value: str) -> bool:
    """Write ``value`` to ``path`` readable by its owner alone; False if it exists.

    Raises ValueError, with the fix, for what can't hold a secret: a directory where the
    file should be (``docker run -v`` makes one where the file is missing), or a file
    that others may read.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_dir():
        raise ValueError(
            f"{path} is a directory, which Docker makes where a mounted file is missing; "
            f"remove it (rmdir {path}) and run this script again"
        )
    try:
        # O_EXCL: never replace a secret that is in use; 0o600 from the first byte.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise ValueError(
                f"{path} may be read by others (mode {mode:o}): chmod 600 {path}"
            ) from None
        return False
    with os.fdopen(fd, "w") as file:
        file.write(value + "\n")
    return True


def main() -> None:
    for path, make in SECRETS.items():
        try:
            wrote = write_once(path, make())
        except ValueError as error:
            sys.exit(f"make_secrets.py: {error}")
        print(f"{'wrote' if wrote else 'kept'} {path}")


if __name__ == "__main__":
    main()
# __secrets_end__
