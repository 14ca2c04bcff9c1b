"""The models page's table of architecture classes (docs/_ext/model_architectures.py): a
row per family of the release data, the run the fake-NPU tier serves on its class's tiny
model, and, for a class with no tiny model, what vLLM's CPU build printed for one, read
from the probe's file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.cpu_architectures import PROBES, _root_error, stage_of

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.releases.architectures import model_families

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from model_architectures import (  # noqa: E402
    TEXTS,
    answered_on_stand_in,
    cpu_probe,
    fake_tier_cell,
)

TAG = compat.VLLM_ASCEND.tag
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_probe_tried_every_class_and_each_stand_in_class_served() -> None:
    probe = cpu_probe(DOCS)
    assert {result["architecture"] for result in probe["results"]} == set(PROBES)
    # The tier's own tiny models, one per class, each served in the probe.
    assert {(r["class"], r["model"]) for r in probe["stand_ins"] if r["served"]} == {
        (architecture, spec.family) for architecture, spec in STAND_IN_SPECS.items()
    }
    for result in probe["results"]:
        assert result["served"] or result["error"], result


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_a_class_without_a_stand_in_shows_what_the_cpu_build_printed(language: str) -> None:
    probe = cpu_probe(DOCS)
    classes = {family.architecture for family in model_families(TAG)} - set(STAND_IN_SPECS)
    assert classes == {"sparse-attention", "hybrid-attention-moe"}
    for architecture in classes:
        (failed, *_) = [r for r in probe["results"] if r["class"] == architecture]
        cell = fake_tier_cell(architecture, None, TEXTS[language], probe)
        assert failed["error"] in cell and failed["architecture"] in cell


def test_a_class_with_a_stand_in_names_its_tiny_model_and_the_run_served_on_it() -> None:
    words, probe = TEXTS["en"], cpu_probe(DOCS)
    cell = fake_tier_cell("mla-moe", "DeepSeek-R1-0528-W8A8-single", words, probe)
    assert cell == words["stand_in"].format(
        family="deepseek-v3", run="DeepSeek-R1-0528-W8A8-single"
    )
    assert fake_tier_cell("moe", None, words, probe) == words["stand_in_unserved"].format(
        family="mixtral", vllm=probe["vllm"]
    )
    # A run of the family that answered in the dry-run of every model is named with its date.
    assert fake_tier_cell("moe", None, words, probe, ("Kimi-K2.6", "2026-12-07")) == words[
        "stand_in_dry_run"
    ].format(family="mixtral", run="Kimi-K2.6", date="2026-12-07")
    # A stand-in the probe did not serve, with no run served on it, is not shown as one.
    unproved = {**probe, "stand_ins": [r for r in probe["stand_ins"] if r["class"] != "moe"]}
    with pytest.raises(ValueError, match="no served probe of the `moe` tiny model"):
        fake_tier_cell("moe", None, words, unproved)


def test_a_class_the_probe_never_failed_and_the_tier_lacks_is_an_error_that_says_the_fix() -> None:
    with pytest.raises(ValueError, match="cpu_architectures"):
        fake_tier_cell("no-such-class", None, TEXTS["en"], cpu_probe(DOCS))


@pytest.mark.parametrize(
    ("output", "cause"),
    [
        # glibc's report shares the line of vLLM's progress bar; vLLM's wrappers follow.
        (
            "Processed prompts:   0%| 0/1 [00:00<?, ?it/s]free(): invalid next size (fast)\n"
            "RuntimeError: cancelled\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore",
            "free(): invalid next size (fast)",
        ),
        (
            "(Worker pid=1) ERROR [x.py:944] NotImplementedError: Sparse Attention is not "
            "supported on CPU.\nException: WorkerProc initialization failed due to an exception"
            "\nRuntimeError: Engine core initialization failed. See root cause",
            "NotImplementedError: Sparse Attention is not supported on CPU.",
        ),
    ],
)
def test_the_probe_records_the_cause_not_vllms_wrappers(output: str, cause: str) -> None:
    assert _root_error(output) == cause


def test_a_probe_that_failed_reading_its_config_is_told_apart_from_an_engine_failure() -> None:
    assert stage_of("ERROR [repo_utils.py:119] Error parsing config for /m: ValueError") == (
        "config"
    )
    assert stage_of("NotImplementedError: Sparse Attention is not supported on CPU.") == "engine"
    probe = {
        "vllm": "0.29.0",
        "transformers": "5.25.0",
        "results": [
            {
                "architecture": "DeepseekV4ForCausalLM",
                "class": "hybrid-attention-moe",
                "served": False,
                "stage": "config",
                "error": "ValueError: bad",
            }
        ],
    }
    assert fake_tier_cell("hybrid-attention-moe", None, TEXTS["en"], probe) == (
        "no tiny model: vLLM 0.29.0 did not read the config of a tiny `DeepseekV4ForCausalLM` "
        "that transformers 5.25.0 wrote: `ValueError: bad`"
    )


def test_a_family_s_dry_run_counts_only_on_its_class_s_own_tiny_model() -> None:
    (family,) = [f for f in model_families(TAG) if f.family == "DeepSeek-R1"]
    own = "'/models/X' -> '/tmp/m/tiny-deepseek-v3-1a2b' (why)"
    fallback = "'/models/X' -> '/tmp/m/tiny-mixtral-1a2b' (why)"
    row = {"model": "org/DeepSeek-R1-0528-W8A8", "answered": True, "date": "2026-12-05"}
    record = {"dry_runs": [{**row, "run": "R1-fallback", "stand_in": fallback}]}
    assert answered_on_stand_in(family, record) is None
    record["dry_runs"].append({**row, "run": "R1-own", "stand_in": own})
    assert answered_on_stand_in(family, record) == ("R1-own", "2026-12-05")
    record["dry_runs"][-1]["answered"] = False
    assert answered_on_stand_in(family, record) is None
