"""The architecture class of each model family, as vLLM-Ascend's pages at a release say it.

``tutorials/<tag>/architectures.yaml`` holds, for each family whose pages say what it is
(dense, mixture-of-experts, latent or sparse attention), the class and every line that
says so, with that line's words. The fake-NPU tier serves a model with a tiny random model
of its class where vLLM's CPU build serves that class
(:mod:`ray_serve_npu.fake_npu.tiny_model`); the models page shows the class beside each
run. Read without Markdown or vLLM: the vLLM-Ascend image runs this.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

import yaml
from pydantic import BaseModel, ValidationError, field_validator

from ray_serve_npu.releases.model import BadReleaseDataError
from ray_serve_npu.releases.tutorials import TUTORIALS_DIR

#: The file of a tag's families, in the tag's tutorials folder.
ARCHITECTURES_FILE = "architectures.yaml"

#: ``dense``: one feed-forward network per layer; ``moe``: mixture-of-experts layers;
#: ``mla-moe``: both mixture-of-experts layers and multi-head latent attention;
#: ``sparse-attention``: DeepSeek sparse attention (DSA); ``hybrid-attention-moe``:
#: mixture-of-experts layers beside compressed attention (DeepSeek-V4's Compress-4 and
#: Compress-128 attention).
ArchitectureClass = Literal["dense", "moe", "mla-moe", "sparse-attention", "hybrid-attention-moe"]


class SourceLine(BaseModel, frozen=True):
    """A line of vLLM-Ascend's repository at the tag, and the words of it that are used."""

    path: str
    line: int
    says: str


class ModelFamily(BaseModel, frozen=True):
    """Models whose weights' repository name starts with ``match`` (lower case)."""

    family: str
    match: str
    architecture: ArchitectureClass
    sources: tuple[SourceLine, ...]

    @field_validator("match")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"not a regular expression ({error}); fix the pattern") from None
        return pattern

    def matches(self, model: str) -> bool:
        """Whether ``model`` (``org/Name-W8A8`` or a served name) is of this family."""
        return re.match(self.match, model.rsplit("/", 1)[-1].lower()) is not None


class _File(BaseModel, frozen=True):
    families: tuple[ModelFamily, ...]


@cache
def model_families(tag: str) -> tuple[ModelFamily, ...]:
    """The families of the tag's file; none where the tag keeps no file."""
    path = TUTORIALS_DIR / tag / ARCHITECTURES_FILE
    if not path.is_file():
        return ()
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    try:
        return _File.model_validate(raw).families
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BadReleaseDataError(f"{path}: {where}: {first['msg']}") from None


def family_of(model: str, tag: str) -> ModelFamily | None:
    """The family ``model`` belongs to at ``tag``; None where no page of the tag says."""
    return next((family for family in model_families(tag) if family.matches(model)), None)
