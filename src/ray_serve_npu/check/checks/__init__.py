"""The checks that rule files name, by concern; a rule supplies severity, text, params
and source. :data:`CHECKS` is the registry: the name a rule's ``check`` gives -> the
function."""

from __future__ import annotations

from ray_serve_npu.check.checks.common import Check
from ray_serve_npu.check.checks.engine import (
    check_additional_config_keys,
    check_capture_sizes,
    check_env_var,
    check_interlock,
    check_no_effect_for_model,
    check_shell_values,
    check_unread_values,
    check_value_type,
    check_vllm_flags,
    check_vllm_values,
)
from ray_serve_npu.check.checks.model_runs import (
    check_model_run_npus,
    check_model_run_settings,
)
from ray_serve_npu.check.checks.node import (
    check_image_node_kind,
    check_jemalloc_path,
    check_max_model_len,
    check_max_model_len_unproven,
    check_node_kind_conflict,
    check_parallel_fits_node,
    image_node_kind,
    image_release,
)
from ray_serve_npu.check.checks.security import (
    check_kernel_tuning_in_container,
    check_local_media_path,
    check_open_endpoint,
    check_privileged,
    check_ray_bind_all,
    check_secrets,
    check_writable_host_mount,
)

CHECKS: dict[str, Check] = {
    "vllm_flags": check_vllm_flags,
    "vllm_values": check_vllm_values,
    "additional_config_keys": check_additional_config_keys,
    "env_var": check_env_var,
    "no_effect_for_model": check_no_effect_for_model,
    "interlock": check_interlock,
    "value_type": check_value_type,
    "capture_sizes": check_capture_sizes,
    "parallel_fits_node": check_parallel_fits_node,
    "image_node_kind": check_image_node_kind,
    "node_kind_conflict": check_node_kind_conflict,
    "max_model_len": check_max_model_len,
    "max_model_len_unproven": check_max_model_len_unproven,
    "jemalloc_path": check_jemalloc_path,
    "privileged": check_privileged,
    "kernel_tuning_in_container": check_kernel_tuning_in_container,
    "ray_bind_all": check_ray_bind_all,
    "open_endpoint": check_open_endpoint,
    "local_media_path": check_local_media_path,
    "secrets": check_secrets,
    "writable_host_mount": check_writable_host_mount,
    "unread_values": check_unread_values,
    "shell_values": check_shell_values,
    "model_run_npus": check_model_run_npus,
    "model_run_settings": check_model_run_settings,
}

__all__ = ["CHECKS", "Check", "image_node_kind", "image_release"]
