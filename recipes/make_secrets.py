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
import stat
import sys
import tempfile
from pathlib import Path

SECRETS = {
    Path.home() / ".ray" / "auth_token": lambda: secrets.token_hex(32),
    Path.home() / ".ray-serve-npu" / "api_key": lambda: secrets.token_urlsafe(32),
}


def write_once(path: Path, value: str) -> bool:
    """Write ``value`` to ``path`` readable by its owner alone; False if it holds one.

    Raises ValueError, with the fix, for what can't hold a secret: a directory where the
    file should be (``docker run -v`` makes one where the file is missing), a link, an
    empty file, or a file that is someone else's or that others may read.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        found = path.lstat()
    except FileNotFoundError:
        found = None
    if found is not None:
        if stat.S_ISDIR(found.st_mode):
            raise ValueError(
                f"{path} is a directory, which Docker makes where a mounted file is missing; "
                f"remove it (rmdir {path}) and run this script again"
            )
        if not stat.S_ISREG(found.st_mode):
            raise ValueError(f"{path} is not a plain file: remove it and run this script again")
        if found.st_uid != os.getuid():
            raise ValueError(f"{path} is another user's: run this script as its owner")
        if found.st_mode & 0o077:
            raise ValueError(f"{path} may be read by others: chmod 600 {path}")
        if found.st_size == 0:
            raise ValueError(f"{path} is empty: remove it and run this script again")
        return False
    # Written whole to a private file first, then linked into place: a reader never sees
    # half a secret, and a file that appeared meanwhile is never replaced.
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(value + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)
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
