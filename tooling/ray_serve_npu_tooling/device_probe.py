"""What a Ray worker on one NPU bundle sees, in a module light enough to import in each worker.

:class:`ray_serve_npu_tooling.mock_engine.PlacementProbeEngine` runs :func:`device_probe`
as a Ray task on every bundle of its rank. Ray ships a module-level function by reference,
so each task's worker imports the module that defines it: defined in ``mock_engine``,
which imports Ray Serve LLM and vLLM, every probe worker paid that import (8 to 11 s and
640 MB each, measured; sixteen of them on a fake A3 node). This module imports only Ray
and the hardware facts; a test keeps it so.
"""

from __future__ import annotations

import os
from typing import Any

import ray

from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.hardware import NPU_RESOURCE


def device_probe() -> dict[str, Any]:
    """Ray's NPU ids for this worker, the devices it may see, and its node."""
    context = ray.get_runtime_context()
    return {
        "npu_ids": context.get_accelerator_ids().get(NPU_RESOURCE, []),
        VISIBLE_DEVICES_ENV_VAR: os.environ.get(VISIBLE_DEVICES_ENV_VAR),
        "node_id": context.get_node_id(),
    }
