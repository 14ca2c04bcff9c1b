"""Fail at build time where Serve would wait forever: NPU placement groups no node can hold.

Serve creates one placement group per replica from the bundles that
``LLMServer.get_deployment_options`` computes, and waits until Ray places it. A
group that no node (or set of nodes) of the cluster can ever hold leaves the app
``DEPLOYING`` with no error. :func:`check_placement` compares each NPU
deployment's bundles with the nodes' total resources and raises
:class:`InfeasiblePlacementError` with the bundle, the largest node and the fix.

Every rule is a necessary condition for Ray to place the group, so the check never
rejects a group that Ray could place. It compares totals, not what is free now:
resources that other apps hold are released eventually, and Serve rightly waits.
Where an autoscaler has reported node types that it can add (its cluster config
in the GCS, ``ray._private.state.GlobalState.get_cluster_config``), those count as
nodes too, and a group that only they can hold gets a warning instead of an error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from ray_serve_npu.hardware import NPU_RESOURCE

logger = logging.getLogger(__name__)


class InfeasiblePlacementError(ValueError):
    """A replica's placement group needs more than any node of the cluster has."""


class NodeCapacity(BaseModel, frozen=True):
    """What one node offers: a live node, or a node type an autoscaler can add."""

    #: The node's IP address, or ``node type <name>`` for an autoscaler's node type.
    name: str
    #: The node's total resources (not what is free now).
    resources: dict[str, float]


class PlacementRequest(BaseModel, frozen=True):
    """One replica's placement group, as Serve will ask Ray for it."""

    model_id: str
    bundles: list[dict[str, float]]
    #: ``PACK``, ``STRICT_PACK``, ``SPREAD`` or ``STRICT_SPREAD``.
    strategy: str
    #: Replicas in one data-parallel gang (one placement group for all of them).
    data_parallel_size: int = 1

    @property
    def parallel_sizes(self) -> str:
        """The engine settings whose product is the NPUs the group asks for."""
        sizes = "tensor_parallel_size x pipeline_parallel_size"
        return f"data_parallel_size x {sizes}" if self.data_parallel_size > 1 else sizes


def _fits(need: Mapping[str, float], node: NodeCapacity) -> bool:
    return all(amount <= node.resources.get(key, 0) for key, amount in need.items() if amount)


def _total(resources: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for entry in resources:
        for key, amount in entry.items():
            total[key] = total.get(key, 0) + amount
    return total


def _largest(nodes: Sequence[NodeCapacity], need: Mapping[str, float]) -> NodeCapacity:
    """The node with the most NPUs (or of the first resource ``need`` names)."""
    key = NPU_RESOURCE if NPU_RESOURCE in need else next(iter(need))
    return max(nodes, key=lambda node: node.resources.get(key, 0))


def _show(resources: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(resources.items()) if v) + "}"


def infeasibility(request: PlacementRequest, nodes: Sequence[NodeCapacity]) -> str | None:
    """Why Ray can never place ``request`` on ``nodes``; None where it may.

    Raises ValueError for an empty ``nodes``: with no node, there is nothing to compare.
    """
    if not nodes:
        raise ValueError("nodes: give at least one node")
    where = (
        f"{request.model_id}: the placement group of a gang of {request.data_parallel_size} "
        "data-parallel replicas"
        if request.data_parallel_size > 1
        else f"{request.model_id}: a replica's placement group"
    )
    for index, bundle in enumerate(request.bundles):
        if not any(_fits(bundle, node) for node in nodes):
            largest = _largest(nodes, bundle)
            return (
                f"{where} has bundle {index} {_show(bundle)}, which no node can hold; the "
                f"largest node, {largest.name}, has {_show(largest.resources)}. Fix: ask for "
                "fewer resources per bundle (one NPU per engine worker is what the npu kind "
                "uses), or add a node that has them."
            )
    need = _total(request.bundles)
    strategy = request.strategy.upper()
    if strategy == "STRICT_PACK" and not any(_fits(need, node) for node in nodes):
        largest = _largest(nodes, need)
        return (
            f"{where} packs all {len(request.bundles)} bundles on one node (strategy "
            f"STRICT_PACK), which needs {_show(need)}; the largest node, {largest.name}, has "
            f"{_show(largest.resources)}. Fix: lower tensor_parallel_size x "
            f"pipeline_parallel_size to at most {largest.resources.get(NPU_RESOURCE, 0):g} "
            "NPUs per replica, or let the replica span nodes with placement_group_config "
            'strategy "PACK", or add a node with enough NPUs.'
        )
    if strategy == "STRICT_SPREAD" and len(request.bundles) > len(nodes):
        return (
            f"{where} puts each of its {len(request.bundles)} bundles on a different node "
            f"(strategy STRICT_SPREAD), but there are only {len(nodes)} nodes. Fix: use "
            'strategy "PACK" or "SPREAD", or add nodes.'
        )
    cluster = _total(node.resources for node in nodes)
    if not all(amount <= cluster.get(key, 0) for key, amount in need.items() if amount):
        largest = _largest(nodes, need)
        return (
            f"{where} needs {_show(need)} in all, more than the {len(nodes)} node(s) have "
            f"together ({_show(cluster)}; the largest node, {largest.name}, has "
            f"{_show(largest.resources)}). Fix: lower {request.parallel_sizes}, or add nodes."
        )
    return None


def placement_request(llm_config: object) -> PlacementRequest | None:
    """The placement group Serve will create for each replica of ``llm_config``.

    Computed by Ray Serve LLM itself (``LLMServer.get_deployment_options``, which
    also merges the replica actor's own bundle into the first one). None where the
    deployment asks for no NPU: other kinds are Ray's business.
    """
    from ray.llm._internal.serve.core.server.llm_server import LLMServer

    if data_parallel_size(llm_config) > 1:
        return gang_placement_request(llm_config)
    options = LLMServer.get_deployment_options(llm_config)
    bundles = options.get("placement_group_bundles")
    if not bundles or not any(bundle.get(NPU_RESOURCE, 0) for bundle in bundles):
        return None
    return PlacementRequest(
        model_id=llm_config.model_id,  # type: ignore[attr-defined]
        bundles=bundles,
        strategy=options.get("placement_group_strategy") or "PACK",
    )


def data_parallel_size(llm_config: object) -> int:
    """The config's ``engine_kwargs["data_parallel_size"]`` (1 where unset)."""
    engine_kwargs = getattr(llm_config, "engine_kwargs", None) or {}
    return int(engine_kwargs.get("data_parallel_size") or 1)


def gang_placement_request(llm_config: object) -> PlacementRequest | None:
    """The one placement group Serve reserves for a data-parallel gang of ``llm_config``.

    Ray Serve LLM's ``DPServer.get_deployment_options`` (the data-parallel pattern,
    ``ray/llm/_internal/serve/serving_patterns/data_parallel/dp_server.py``, the
    same in Ray 2.56.1, 2.57.1 and 2.60.0) turns ``data_parallel_size`` into a gang
    of that many replicas; Serve then reserves one group holding every replica's
    bundles in rank order, with the gang's strategy (``PACK``), and places each
    rank's actor and engine workers in that rank's slice
    (``DeploymentScheduler._prepare_gangs_for_deployment``). None where the gang
    asks for no NPU.
    """
    from ray.llm._internal.serve.serving_patterns.data_parallel.dp_server import DPServer

    options = DPServer.get_deployment_options(llm_config)
    bundles = options.get("placement_group_bundles")
    gang = options.get("gang_scheduling_config")
    if not bundles or gang is None or not any(b.get(NPU_RESOURCE, 0) for b in bundles):
        return None
    strategy = getattr(gang.gang_placement_strategy, "value", gang.gang_placement_strategy)
    return PlacementRequest(
        model_id=llm_config.model_id,  # type: ignore[attr-defined]
        bundles=[dict(bundle) for _ in range(gang.gang_size) for bundle in bundles],
        strategy=str(strategy),
        data_parallel_size=gang.gang_size,
    )


def live_nodes() -> list[NodeCapacity]:
    """The cluster's live nodes and their total resources."""
    import ray

    return [
        NodeCapacity(name=node["NodeManagerAddress"], resources=node["Resources"])
        for node in ray.nodes()
        if node["Alive"]
    ]


def autoscaler_nodes() -> list[NodeCapacity]:
    """One entry per node an autoscaler may add, from the cluster config it reported.

    Empty where no autoscaler reported one (a cluster of ``ray start`` nodes). A node
    type without an upper bound is counted once per bundle a group could need.
    """
    from ray._private.state import state

    config = state.get_cluster_config()
    if config is None:
        return []
    nodes = []
    for group in config.node_group_configs:
        count = group.max_count if group.max_count >= 0 else _UNBOUNDED_NODE_TYPE_COUNT
        nodes += [
            NodeCapacity(name=f"node type {group.name}", resources=dict(group.resources))
        ] * count
    return nodes


#: How many nodes of an unbounded node type to consider: more than any replica's bundles.
_UNBOUNDED_NODE_TYPE_COUNT = 64


def check_placement(llm_configs: Sequence[object]) -> None:
    """Raise :class:`InfeasiblePlacementError` for a deployment no node set can hold.

    Runs only where this process is connected to a cluster, as it is once Ray
    Serve LLM's builder has run (it reads the runtime context, which connects).
    Elsewhere it does nothing: there are no nodes to compare with.
    """
    import ray

    if not ray.is_initialized():
        return
    requests = [r for r in map(placement_request, llm_configs) if r is not None]
    if not requests:
        return
    now = live_nodes()
    can_add = autoscaler_nodes()
    for request in requests:
        problem = infeasibility(request, now + can_add)
        if problem is not None:
            raise InfeasiblePlacementError(f"{problem} Serve would wait for it forever.")
        if can_add and (problem := infeasibility(request, now)) is not None:
            logger.warning(
                "%s Serve waits until the autoscaler adds nodes of a type that can hold it.",
                problem,
            )
