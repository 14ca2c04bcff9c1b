"""Build the stored file list of an upstream repository at one tag, for the pages' citations.

docs/_ext/upstream_links.py checks every ``{vllm-ascend}``, ``{vllm}`` and ``{ray}``
citation against ``docs/_data/upstream/<role>@<tag>.txt.gz`` so that the docs build
and the tests need no network. This script writes that file from one of:

- ``--git-dir``: a clone of the repository (``git ls-tree -r --name-only <tag>``);
  the whole tree at the tag. Used for vLLM-Ascend.
- ``--sdist``: the release's source archive from PyPI, whose files are the
  repository's tracked files at the tag (packaging metadata dropped). Used for vLLM,
  whose clone is too large to fetch here.
- ``--wheel-record``: the ``RECORD`` of an installed wheel. The wheel holds the
  package directory only, under ``python/`` in the repository, less what the build
  generates or vendors. Used for Ray, whose clone is too large to fetch here and which
  publishes no source archive; citations outside ``python/ray`` can't be checked.

The list starts with comment lines naming the source, then one path a line, sorted;
the archive is written without a timestamp, so the same input gives the same bytes.
Afterwards the script reports every citation on the pages that the new list lacks.

    python tools/upstream_paths.py vllm-ascend --git-dir /path/to/vllm-ascend.git
    python tools/upstream_paths.py vllm --sdist vllm-0.22.1.tar.gz
    python tools/upstream_paths.py ray --version 2.60.0 \\
        --wheel-record .../site-packages/ray-2.60.0.dist-info/RECORD
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from upstream_links import UPSTREAMS, check_text, source_text, stored_paths  # noqa: E402

#: Parts of an installed package that its build generates or vendors.
_WHEEL_ONLY = ("thirdparty_files", "generated", "__pycache__")
_WHEEL_ONLY_SUFFIXES = (".pyc", ".so")


def from_git(git_dir: Path, tag: str) -> tuple[list[str], str]:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(
                f"git --git-dir {git_dir} {' '.join(args)} failed: {done.stderr.strip()}. "
                f"Give a clone of the repository that has the tag {tag}."
            )
        return done.stdout

    commit = git("rev-parse", f"{tag}^{{commit}}").strip()
    paths = git("ls-tree", "-r", "--name-only", commit).splitlines()
    return paths, f"git ls-tree -r --name-only {tag} (commit {commit})"


def from_sdist(archive: Path) -> tuple[list[str], str]:
    paths = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = PurePosixPath(member.name).parts[1:]
            if not parts or parts[0].endswith(".egg-info") or parts == ("PKG-INFO",):
                continue
            paths.append("/".join(parts))
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return paths, f"the files of {archive.name} (sha256 {digest}), less packaging metadata"


def from_wheel_record(record: Path, package: str, source_root: str) -> tuple[list[str], str]:
    paths = []
    for line in record.read_text().splitlines():
        path = line.rsplit(",", 2)[0]
        if not path.startswith(package) or path.endswith(_WHEEL_ONLY_SUFFIXES):
            continue
        if any(part in _WHEEL_ONLY for part in PurePosixPath(path).parts):
            continue
        if path.startswith(f"{package}dashboard/client/build/"):
            continue
        paths.append(source_root + path)
    return paths, (
        f"the {package} files of the wheel ({record.parent.name}/RECORD) under {source_root}, "
        "less what the build generates or vendors; nothing outside the package"
    )


def write_list(role: str, tag: str, paths: list[str], how: str) -> Path:
    upstream = UPSTREAMS[role]
    header = [f"# {upstream.repository} at {tag}", f"# from {how}", f"# by {Path(__file__).name}"]
    text = "\n".join(header + sorted(set(paths))) + "\n"
    out = upstream.list_file(tag)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(text.encode(), mtime=0))
    stored_paths.cache_clear()
    return out


def missing_citations(tag: str) -> list[str]:
    """Citations on the pages and in the catalogues that point at ``tag`` and fail."""
    problems = []
    sources = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs").glob("locale/*/*/*.po"))
    for source in sources:
        for line, problem in check_text(source_text(source)):
            if f" at {tag} " in problem:
                problems.append(f"{source.relative_to(ROOT)}:{line}: {problem}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=sorted(UPSTREAMS))
    parser.add_argument("--version", help="the release (default: the one the pages pin)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--git-dir", type=Path)
    source.add_argument("--sdist", type=Path)
    source.add_argument("--wheel-record", type=Path)
    args = parser.parse_args(argv)

    upstream = UPSTREAMS[args.role]
    tag = upstream.tag(args.version)
    version = args.version or upstream.pinned
    if args.git_dir:
        paths, how = from_git(args.git_dir, tag)
    elif args.sdist:
        # An sdist's name carries the version without the tag's "v" (vllm_ascend-0.26.0rc1).
        if not args.sdist.name.endswith(f"-{version.removeprefix('v')}.tar.gz"):
            parser.error(f"--sdist {args.sdist.name} is not the archive of {version}")
        paths, how = from_sdist(args.sdist)
    else:
        if not upstream.package:
            parser.error(f"{args.role} has no package mapping; use --git-dir or --sdist")
        if not args.wheel_record.parent.name.endswith(f"-{version}.dist-info"):
            parser.error(f"--wheel-record {args.wheel_record} is not the wheel of {version}")
        paths, how = from_wheel_record(args.wheel_record, upstream.package, upstream.source_root)
    if not paths:
        parser.error(f"no files found for {upstream.repository} at {tag}")
    out = write_list(args.role, tag, paths, how)
    print(f"{out.relative_to(ROOT)}: {len(set(paths))} paths of {upstream.repository} at {tag}")
    problems = missing_citations(tag)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
