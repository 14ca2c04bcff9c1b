"""Serve configs (``applications: ... args: llm_configs: [...]``), LLMConfig YAML, and the
Serve config of a KubeRay RayService (``spec.serveConfigV2``)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from ray_serve_npu.check.llm_config import deployment_from_llm_config
from ray_serve_npu.check.model import Deployment
from ray_serve_npu.check.problems import InputError, NothingToCheck
from ray_serve_npu.check.validation import first_error
from ray_serve_npu.check.yamlnodes import Document, Path, flatten_lines, load_documents

# Ray reads a Serve config file with PyYAML's safe_load (ray/serve/scripts.py), which
# reads YAML 1.1: `yes` and `off` are booleans there.
SERVE_YAML_VERSION = (1, 1)
SERVE_DOCS = "https://docs.ray.io/en/latest/serve/production-guide/config.html"

_MAPPING = {"type": ["object", "null"]}
# The shape of what the checker reads, so that it never reads a list as a mapping; Ray
# and vLLM validate the rest when they load the config.
_LLM_CONFIG = {
    "type": "object",
    "properties": {
        "model_loading_config": _MAPPING,
        "accelerator_type": {"type": ["string", "null"]},
        "engine_kwargs": _MAPPING,
        "runtime_env": {
            "type": ["object", "null"],
            "properties": {"env_vars": _MAPPING, "image_uri": {"type": ["string", "null"]}},
        },
    },
}
_SERVE_CONFIG = {
    "type": "object",
    "properties": {
        "applications": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "args": {
                        "type": ["object", "null"],
                        "properties": {
                            "llm_configs": {
                                "type": ["array", "null"],
                                # A string names an LLMConfig YAML file.
                                "items": {"anyOf": [{"type": "string"}, _LLM_CONFIG]},
                            },
                            # build_dp_openai_app's one config (DPOpenAiServingArgs,
                            # serving_patterns/data_parallel/builder.py:65 at 2.60.0).
                            "llm_config": {"anyOf": [{"type": "string"}, _LLM_CONFIG]},
                        },
                    }
                },
            },
        }
    },
}
_SERVE_VALIDATOR = Draft202012Validator(_SERVE_CONFIG)
_LLM_CONFIG_VALIDATOR = Draft202012Validator(_LLM_CONFIG)


def parse_serve_yaml(path: str, document: Document) -> list[Deployment]:
    data, lines = document.data, document.lines
    if "model_loading_config" in data:
        first_error(_LLM_CONFIG_VALIDATOR, document, "a valid LLMConfig", SERVE_DOCS)
        return [deployment_from_llm_config(path, data, flatten_lines(lines, ()), lines[()])]
    first_error(_SERVE_VALIDATOR, document, "a valid Serve config", SERVE_DOCS)
    deployments = []
    named: list[str] = []
    for app_index, app in enumerate(data["applications"]):
        args = app.get("args") or {}
        listed: list[tuple[Path, Any]] = [
            (("applications", app_index, "args", "llm_configs", index), config)
            for index, config in enumerate(args.get("llm_configs") or [])
        ]
        if "llm_config" in args:
            listed.append((("applications", app_index, "args", "llm_config"), args["llm_config"]))
        for prefix, config in listed:
            if isinstance(config, str):
                # Another file; it is checked on its own.
                named.append(config)
                continue
            deployments.append(
                deployment_from_llm_config(
                    path, config, flatten_lines(lines, prefix), lines[prefix]
                )
            )
    if not deployments:
        where = f"names LLMConfig files ({', '.join(named)})" if named else "has none"
        raise NothingToCheck(
            f"the Serve config holds no LLMConfig to check: args.llm_configs {where}",
            "check the LLMConfig YAML files themselves"
            if named
            else "check the file that configures the LLM apps (args.llm_configs)",
            lines[()],
        )
    return deployments


def parse_rayservice(path: str, manifest: Document) -> list[Deployment]:
    """The Serve config in ``spec.serveConfigV2``, with the manifest's lines.

    In a literal block (``serveConfigV2: |``) each line of the config is a line of the
    manifest; in any other string style the lines can't be mapped, and every finding
    points at the ``serveConfigV2`` key.
    """
    key: Path = ("spec", "serveConfigV2")
    spec = manifest.data.get("spec")
    text: Any = spec.get("serveConfigV2") if isinstance(spec, dict) else None
    if not isinstance(text, str):
        raise InputError(
            "the RayService has no Serve config (spec.serveConfigV2 as a string)",
            "write the Serve config into spec.serveConfigV2 as a literal block "
            "(`serveConfigV2: |`)",
            manifest.lines.get(key, manifest.lines.get(("spec",), manifest.lines[()])),
        )
    start = manifest.literal_blocks.get(key)
    try:
        documents = load_documents(text, start or 1, SERVE_YAML_VERSION)
    except InputError as error:
        error.problem = f"spec.serveConfigV2: {error.problem}"
        if start is None:
            error.line = manifest.lines[key]
        raise
    if start is None:
        documents = [
            Document(d.data, dict.fromkeys(d.lines, manifest.lines[key]), {}) for d in documents
        ]
    if len(documents) != 1 or not isinstance(documents[0].data, dict):
        raise InputError(
            "spec.serveConfigV2 is not one Serve config (a mapping with applications)",
            "write one Serve config into spec.serveConfigV2",
            manifest.lines[key],
        )
    if "applications" not in documents[0].data:
        raise NothingToCheck(
            "spec.serveConfigV2 has no applications",
            "write the Serve config's applications into spec.serveConfigV2",
            manifest.lines[key],
        )
    return parse_serve_yaml(path, documents[0])
