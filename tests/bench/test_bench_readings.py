"""A lever run's readings (ray_serve_npu_tooling.bench.readings) and the sentences the docs
extension writes from them (docs/_ext/bench_readings.py), on small made-up runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.bench.compare import DEFAULT, DIRECT, Comparison
from ray_serve_npu_tooling.bench.readings import Lean, readings

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from bench_readings import TEXTS, sentence  # noqa: E402


def _arm(target: str, level: int, ttft: list[float], throughput: list[float]) -> Comparison:
    return Comparison(
        target=target, concurrency=level, ttft_p50_ms=ttft, output_tokens_per_s=throughput
    )


#: Three rounds at concurrency 1 and 32: a lever faster in every round at 32, on both
#: sides of the defaults at 1, and direct vLLM beside them.
RUN = [
    _arm(DEFAULT, 1, [100, 100, 100], [50, 50, 50]),
    _arm(DEFAULT, 32, [1000, 1000, 1000], [400, 400, 400]),
    _arm("ha-proxy", 1, [90, 110, 95], [55, 45, 50]),
    _arm("ha-proxy", 32, [600, 700, 500], [480, 500, 520]),
    _arm(DIRECT, 1, [95, 94, 96], [51, 50, 49]),
    _arm(DIRECT, 32, [900, 905, 910], [430, 420, 440]),
]


def test_each_lever_is_read_against_the_defaults_and_direct_vllm_is_no_lever() -> None:
    found = readings(RUN, DEFAULT, paced=False)
    assert [(r.arm, r.concurrency) for r in found] == [("ha-proxy", 1), ("ha-proxy", 32)]
    at_one, at_32 = found
    throughput, ttft = at_32.figures
    assert (throughput.name, throughput.kind, ttft.name, ttft.kind) == (
        "throughput", "ratio", "ttft", "ratio"
    )  # fmt: skip
    assert throughput.values == (1.2, 1.25, 1.3) and throughput.lean is Lean.HIGHER
    assert ttft.values == (0.6, 0.7, 0.5) and ttft.lean is Lean.LOWER
    # Rounds on both sides of the defaults read within noise, whatever the median says.
    assert [f.lean for f in at_one.figures] == [Lean.NOISE, Lean.NOISE]
    assert all(f.target is None for r in found for f in r.figures)


def test_against_direct_vllm_the_time_is_added_and_the_regimes_targets_apply() -> None:
    paced = readings(RUN, DIRECT, paced=True)
    assert [(r.arm, r.concurrency) for r in paced] == [
        (DEFAULT, 1), (DEFAULT, 32), ("ha-proxy", 1), ("ha-proxy", 32)
    ]  # fmt: skip
    throughput, added = paced[1].figures  # the defaults at 32
    assert added.kind == "added" and added.values == (100, 95, 90)
    # At 32 the time added has no target: the TTFT target is set at 1 and 8.
    assert (throughput.target, added.target) == (0.97, None)
    assert not throughput.meets(throughput.median) and throughput.rounds_meeting == 0
    assert added.lean is Lean.HIGHER
    # At 1 it has one: 5, 6 and 4 ms added, each within 10 ms.
    _, added_at_one = paced[0].figures
    assert added_at_one.target == 10.0 and added_at_one.rounds_meeting == 3
    # Unpaced, only the throughput at 32 has a target (0.8).
    unpaced = readings(RUN, DIRECT, paced=False)
    targets = {(r.arm, r.concurrency): [f.target for f in r.figures] for r in unpaced}
    assert targets[DEFAULT, 32] == [0.8, None] and targets[DEFAULT, 1] == [None, None]
    # 400/430, 400/420, 400/440: every round meets 0.8, none meets 0.97.
    assert unpaced[1].figures[0].rounds_meeting == 3
    assert unpaced[1].figures[0].meets(unpaced[1].figures[0].median)


def test_a_run_without_the_reference_arm_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="the run has no 'direct' arm"):
        readings([c for c in RUN if c.target != DIRECT], DIRECT, paced=True)


def test_the_english_sentence_says_each_figure_its_spread_lean_and_target() -> None:
    at_32 = readings(RUN, DIRECT, paced=True)[3]  # ha-proxy at 32
    assert sentence(at_32, TEXTS["en"]) == (
        "`ha-proxy` at concurrency 32: output throughput 1.18 times that of direct vLLM "
        "(1.12 to 1.19 over 3 rounds), higher in every round, the median meets the target "
        "of 0.97 (3 of 3 rounds do); time to first token -300.0 ms against direct vLLM "
        "(-410.0 to -205.0), lower in every round."
    )
    at_one = readings(RUN, DEFAULT, paced=False)[0]
    assert sentence(at_one, TEXTS["en"]) == (
        "`ha-proxy` at concurrency 1: output throughput 1.00 times that of Ray's defaults "
        "(0.90 to 1.10 over 3 rounds), within noise; time to first token 0.95 times that "
        "of Ray's defaults (0.90 to 1.10), within noise."
    )


def test_the_chinese_edition_writes_the_same_figures_in_its_own_words() -> None:
    at_32 = readings(RUN, DEFAULT, paced=False)[1]
    assert sentence(at_32, TEXTS["zh_CN"]) == (
        "`ha-proxy`，并发 32：输出吞吐量是 Ray 的默认设置的 1.25 倍（3 轮中从 1.20 到 1.30），"
        "每一轮都更高；首 token 时间是 Ray 的默认设置的 0.60 倍（从 0.50 到 0.70），每一轮都更低。"
    )
    assert TEXTS["zh_CN"].keys() == TEXTS["en"].keys()
