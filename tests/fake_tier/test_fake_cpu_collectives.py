"""The fake tier's two CPU collectives (ray_serve_npu.fake_npu.vllm_plugins) on a real gloo group.

vLLM's CpuCommunicator lacks ``all_gatherv`` and ``reduce_scatterv``, which the MoE
layers' data-parallel dispatch calls; the fake tier adds both. Two processes, no Ray.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from types import SimpleNamespace

#: Rows each rank contributes: uneven, as the ranks' batches are.
SIZES = [3, 1]


def _rank(rank: int, store: str, results: dict[int, object]) -> None:
    import torch
    import torch.distributed as dist

    from ray_serve_npu.fake_npu.vllm_plugins import _cpu_all_gatherv, _cpu_reduce_scatterv

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        comm = SimpleNamespace(world_size=2, rank_in_group=rank, device_group=None)
        mine = torch.full((SIZES[rank], 2), float(rank + 1))
        gathered = _cpu_all_gatherv(comm, mine, dim=0, sizes=SIZES)
        (listed,) = _cpu_all_gatherv(comm, [mine], dim=0, sizes=SIZES)
        # Every rank holds the whole batch; each rank reduces and keeps its rows.
        whole = torch.arange(8, dtype=torch.float32).reshape(4, 2) * (rank + 1)
        scattered = _cpu_reduce_scatterv(comm, whole, dim=0, sizes=SIZES)
        results[rank] = (gathered.tolist(), listed.tolist(), scattered.tolist())
    finally:
        dist.destroy_process_group()


def test_fake_cpu_all_gatherv_and_reduce_scatterv(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        results = manager.dict()
        store = str(tmp_path / "store")
        processes = [
            context.Process(target=_rank, args=(rank, store, results)) for rank in range(2)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(120)
        assert [process.exitcode for process in processes] == [0, 0]
        results = dict(results)
    expected_gather = [[1.0, 1.0]] * 3 + [[2.0, 2.0]]
    summed = [[0.0, 3.0], [6.0, 9.0], [12.0, 15.0], [18.0, 21.0]]
    for rank in range(2):
        gathered, listed, scattered = results[rank]
        assert gathered == expected_gather
        assert listed == expected_gather
    assert results[0][2] == summed[:3]
    assert results[1][2] == summed[3:]
