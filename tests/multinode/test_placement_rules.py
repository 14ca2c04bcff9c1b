"""The placement check's rules on node lists, with no cluster."""

from __future__ import annotations

import pytest

from ray_serve_npu.placement import NodeCapacity, PlacementRequest, infeasibility

A2 = {"NPU": 8, "CPU": 8}


def request(npus: int, strategy: str) -> PlacementRequest:
    bundles = [{"NPU": 1.0, "CPU": 1.0}] + [{"NPU": 1.0}] * (npus - 1)
    return PlacementRequest(model_id="m", bundles=bundles, strategy=strategy)


def nodes(count: int) -> list[NodeCapacity]:
    return [NodeCapacity(name=f"10.0.0.{i}", resources=A2) for i in range(count)]


@pytest.mark.parametrize(
    ("npus", "strategy", "count", "feasible"),
    [
        (8, "STRICT_PACK", 1, True),
        (9, "STRICT_PACK", 2, False),  # never splits, and no node has nine
        (16, "PACK", 2, True),  # may split: eight and eight
        (16, "PACK", 1, False),
        (3, "STRICT_SPREAD", 2, False),  # three bundles, two nodes
        (2, "STRICT_SPREAD", 2, True),
    ],
)
def test_rules(npus: int, strategy: str, count: int, feasible: bool) -> None:
    assert (infeasibility(request(npus, strategy), nodes(count)) is None) is feasible


def test_a_bundle_no_node_can_hold_names_the_largest_node() -> None:
    big = PlacementRequest(model_id="m", bundles=[{"NPU": 16}], strategy="PACK")
    small = NodeCapacity(name="small", resources={"NPU": 4})
    message = infeasibility(big, [small, *nodes(1)])
    assert message is not None and "bundle 0 {NPU: 16}" in message
    assert "largest node, 10.0.0.0" in message


def test_an_autoscaler_node_type_makes_it_feasible() -> None:
    # What check_placement turns into a warning: infeasible now, feasible once added.
    node_type = NodeCapacity(name="node type a3", resources={"NPU": 16, "CPU": 8})
    assert infeasibility(request(16, "STRICT_PACK"), nodes(2)) is not None
    assert infeasibility(request(16, "STRICT_PACK"), [*nodes(2), node_type]) is None
