"""The A3 Ray recipe (recipes/serve_npu_a3.py) as a reader dry-runs it on a fake A3 node.

``ray-serve-npu dry-run --node-kind A3 serve_npu_a3.py --keep-serving`` starts a fake
A3 node (sixteen fake NPUs), runs the recipe through the fake tier's adapter (four
data-parallel ranks, one CPU engine worker each, a tiny mixture-of-experts model),
sends one chat request and prints each engine worker's NPUs. What it prints is what
these tests read. tests/fake_tier/test_fake_npu_a3_data_parallel.py serves the same
recipe on a fake A3 node of its own, whose cluster it reads directly, and kills a rank.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator

import pytest
from dry_runs import dry_run_serving

from ray_serve_npu.fake_npu.dry_run import STOPPED_LINE, DryRunProcess
from ray_serve_npu.hardware import A3, VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.releases import SERVE_LLM_RELEASE

RECIPE = "serve_npu_a3.py"
MODEL_ID = "deepseek-v4-flash"
RANKS = SERVE_LLM_RELEASE.run("A3").data_parallel_size
#: Measured here: the command serves about 180 s after it starts, on two cores.
READY_TIMEOUT_S = 900
STOP_TIMEOUT_S = 180
WORKER_LINE = re.compile(
    rf"^fake-npu tier: engine worker (\d+) holds NPU ([\d,]+); {VISIBLE_DEVICES_ENV_VAR}=(\S+)$",
    re.M,
)

pytestmark = pytest.mark.fake_npu


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DryRunProcess]:
    with dry_run_serving(
        ["--node-kind", "A3", RECIPE], tmp_path_factory, ready_timeout_s=READY_TIMEOUT_S
    ) as run:
        yield run


def test_fake_a3_dry_run_serves_the_ray_recipe_on_a_fake_a3_node(dry_run: DryRunProcess) -> None:
    output = dry_run.output()
    assert "fake-npu tier: 1 fake A3 node(s) at " in output
    assert f"fake-npu tier: running `python {RECIPE}`" in output
    assert "engine_kwargs.tensor_parallel_size: 4 -> 1 (one CPU engine worker per" in output
    reply = dry_run.chat_reply()
    assert reply["model"] == MODEL_ID
    assert reply["choices"][0]["message"]["role"] == "assistant"


def test_fake_a3_dry_run_prints_one_engine_worker_per_rank_on_its_own_npu(
    dry_run: DryRunProcess,
) -> None:
    workers = WORKER_LINE.findall(dry_run.output())
    # Only the ranks' engine workers: the engine-config tasks' token NPU share is no worker.
    assert len(workers) == RANKS, dry_run.output()[-4000:]
    assert all(visible == npus for _, npus, visible in workers), workers
    held = [int(npu) for _, npus, _ in workers for npu in npus.split(",")]
    assert len(held) == len(set(held)), f"two ranks share an NPU: {workers}"
    assert set(held) <= set(range(A3.devices_per_node))


def test_fake_a3_dry_run_stops_cleanly_on_ctrl_c(dry_run: DryRunProcess) -> None:
    dry_run.process.send_signal(signal.SIGINT)
    assert dry_run.process.wait(timeout=STOP_TIMEOUT_S) == 0, dry_run.output()[-6000:]
    assert dry_run.output().rstrip().endswith(STOPPED_LINE)
