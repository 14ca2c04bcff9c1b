"""The release workflow checks every change with ``nox -s release`` and publishes only
from a tag, through trusted publishing, with the changelog's section as its notes.

Read with a YAML 1.2 parser (ruamel.yaml), so that ``on`` stays a key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray_serve_npu_tooling.harness.server_config import commands
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
ON_A_TAG = "startsWith(github.ref, 'refs/tags/v')"


def _workflow() -> dict[str, Any]:
    return YAML(typ="safe").load(WORKFLOW.read_text())


def _runs(job: dict[str, Any]) -> list[list[str]]:
    return [argv for step in job["steps"] if "run" in step for argv in commands(step["run"])]


def _uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if step.get("uses", "").startswith(action)]


def test_every_change_is_built_and_checked_by_the_nox_session() -> None:
    workflow = _workflow()
    assert {"push", "pull_request"} <= set(workflow["on"])
    assert workflow["on"]["push"]["tags"] == ["v*"]
    build = workflow["jobs"]["build"]
    assert "if" not in build
    runs = _runs(build)
    assert ["nox", "-s", "release"] in runs
    # On a tag, the session holds the tag to the version and the changelog's date.
    assert ["nox", "-s", "release", "--", "--tag", "$GITHUB_REF_NAME"] in runs
    (checkout,) = _uses(build, "actions/checkout")
    assert checkout["with"]["persist-credentials"] is False
    uploads = {
        step["with"]["name"]: step["with"]["path"] for step in _uses(build, "actions/upload")
    }
    # Where the session writes them (noxfile.py, release).
    assert uploads == {"dist": "build/dist/", "release-notes": "build/release-notes.md"}


def test_publishing_needs_a_tag_and_trusted_publishing() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    publish = workflow["jobs"]["publish-pypi"]
    assert publish["needs"] == "build"
    assert ON_A_TAG in publish["if"] and "github.event_name == 'push'" in publish["if"]
    # Trusted publishing: an OIDC token for this job alone, no stored password.
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"] == "pypi"
    (upload,) = _uses(publish, "pypa/gh-action-pypi-publish")
    assert not {"password", "user"} & set(upload.get("with", {}))
    assert "secrets." not in WORKFLOW.read_text()


def test_the_github_release_carries_the_changelog_notes() -> None:
    jobs = _workflow()["jobs"]
    release = jobs["github-release"]
    assert set(release["needs"]) == {"build", "publish-pypi"}
    assert ON_A_TAG in release["if"]
    assert release["permissions"] == {"contents": "write"}
    (create,) = [argv for argv in _runs(release) if argv[:3] == ["gh", "release", "create"]]
    downloads = {s["with"]["name"]: s["with"]["path"] for s in _uses(release, "actions/download")}
    notes = Path(downloads["release-notes"]) / "release-notes.md"
    assert create[create.index("--notes-file") + 1] == str(notes)
    # Every other job reads the repository only.
    for name, job in jobs.items():
        if name not in {"publish-pypi", "github-release"}:
            assert "permissions" not in job, name
