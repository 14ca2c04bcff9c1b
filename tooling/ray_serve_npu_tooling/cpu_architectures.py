"""Which architecture classes vLLM's CPU build serves: a tiny random model of each, served.

For each model architecture that vLLM-Ascend's tutorials put in a class
(``ray_serve_npu.releases.architectures``), this builds a tiny random model of that
architecture with transformers' own config class, asks vLLM's CPU build to generate four
tokens from it in a process of its own, and records what happened: served, or the last
error line vLLM printed. It serves the fake tier's own tiny models the same way, one per
class it stands in for (``ray_serve_npu.fake_npu.tiny_model.STAND_IN_SPECS``). The models
page says why a class has no tiny model on the fake-NPU tier from the file it writes
(``CPU_ARCHITECTURES_FILE``), never from prose.

Run it alone, in an environment with vLLM's CPU build (``nox -s bench`` makes one), from
the repository's root::

    python -m ray_serve_npu_tooling.cpu_architectures

It takes a few minutes; it is not part of the test suite.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ray_serve_npu.fake_npu.tiny_model import CPU_MLA_KV_LORA_RANK, CPU_MLA_ROPE_HEAD_DIM

#: The probe's results, which the models page reads: below the site's source directory,
#: ``docs/`` from the repository's root, where the command runs.
CPU_ARCHITECTURES_FILE = Path("_static") / "cpu-architectures.json"
#: The site's source directory, from the repository's root.
DOCS_DIR = Path("docs")

#: Shared by every probe: small enough to build and load in seconds.
_COMMON: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
    "bos_token_id": 0,
    "eos_token_id": 1,
}
_EXPERTS: dict[str, Any] = {"num_experts_per_tok": 2, "moe_intermediate_size": 64}
#: DeepSeek-style routing of four experts in one group, the first layer dense.
_DEEPSEEK_MOE: dict[str, Any] = {
    **_EXPERTS,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
}
#: The only latent size vLLM's CPU MLA kernel takes, as the tier's own tiny model has it.
_LATENT: dict[str, Any] = {
    "kv_lora_rank": CPU_MLA_KV_LORA_RANK,
    "qk_rope_head_dim": CPU_MLA_ROPE_HEAD_DIM,
    "q_lora_rank": 64,
    "qk_nope_head_dim": 32,
    "v_head_dim": 32,
}
_INDEXER: dict[str, Any] = {"index_n_heads": 4, "index_head_dim": 64, "index_topk": 64}

#: Each architecture probed: its class (as ``architectures.yaml`` names classes), the
#: transformers config class, and the settings that make it tiny.
PROBES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "Qwen3ForCausalLM": ("dense", "Qwen3Config", {"head_dim": 32}),
    "Qwen3MoeForCausalLM": (
        "moe",
        "Qwen3MoeConfig",
        {"head_dim": 32, "num_experts": 4, "decoder_sparse_step": 1, **_EXPERTS},
    ),
    "Glm4MoeForCausalLM": ("moe", "Glm4MoeConfig", {"head_dim": 32, **_DEEPSEEK_MOE}),
    "MiniMaxM2ForCausalLM": (
        "moe",
        "MiniMaxM2Config",
        {
            "head_dim": 32,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "rotary_dim": 16,
            "scoring_func": "sigmoid",
            "use_routing_bias": True,
        },
    ),
    "DeepseekV3ForCausalLM": (
        "mla-moe",
        "DeepseekV3Config",
        {**_DEEPSEEK_MOE, **_LATENT, "topk_method": "noaux_tc"},
    ),
    "GlmMoeDsaForCausalLM": (
        "sparse-attention",
        "GlmMoeDsaConfig",
        {**_DEEPSEEK_MOE, **_LATENT, **_INDEXER},
    ),
    "DeepseekV4ForCausalLM": (
        "hybrid-attention-moe",
        "DeepseekV4Config",
        {
            **_EXPERTS,
            **_INDEXER,
            "n_routed_experts": 4,
            "head_dim": 512,
            "num_key_value_heads": 1,
            "q_lora_rank": 64,
            "o_lora_rank": 64,
            "o_groups": 2,
            "num_nextn_predict_layers": 0,
            "mlp_layer_types": ["moe", "moe"],
        },
    ),
}

#: The child process: load the tiny model with vLLM's CPU build and generate.
_SERVE = """
import sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":
    llm = LLM(model=sys.argv[1], max_model_len=256, enforce_eager=True, max_num_seqs=4)
    llm.generate(["Ray Serve"], SamplingParams(max_tokens=4))
    print("PROBE-SERVED")
"""
#: How long one architecture may take to load and answer.
PROBE_TIMEOUT_S = 600


def build(architecture: str, out: Path, tokenizer_from: Path) -> None:
    """A tiny random model of ``architecture`` in ``out``, with the tier's tokenizer."""
    import torch
    import transformers

    _, config_name, settings = PROBES[architecture]
    vocab = json.loads((tokenizer_from / "tokenizer.json").read_text())["model"]["vocab"]
    config = getattr(transformers, config_name)(**{**_COMMON, **settings, "vocab_size": len(vocab)})
    config.architectures = [architecture]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.to(torch.bfloat16).save_pretrained(out)
    for path in tokenizer_from.iterdir():
        if path.name.startswith("tokenizer") or path.name.endswith(".jinja"):
            shutil.copy(path, out / path.name)


#: Lines vLLM prints after the error that stopped it, which name no cause of their own.
_WRAPPERS = (
    "Engine core initialization failed",
    "WorkerProc initialization failed",
    "EngineDeadError",
    "RuntimeError: cancelled",
)
#: An exception's name and message, or glibc's report of a corrupted heap.
_ERROR = re.compile(r"\b[A-Za-z_.]*(?:Error|Exception)\b: .*|free\(\): .*")


def _root_error(output: str) -> str:
    """The last exception or crash report in ``output``, less vLLM's wrappers: what
    stopped it (a progress bar may share its line, so only the match is kept)."""
    errors = [
        found.group(0).strip()
        for line in output.replace("\r", "\n").splitlines()
        if (found := _ERROR.search(line)) and not any(w in line for w in _WRAPPERS)
    ]
    lines = output.strip().splitlines()
    return errors[-1] if errors else (lines[-1] if lines else "no output")


#: What vLLM logs when it cannot read a model's config (vllm/transformers_utils/repo_utils.py).
_CONFIG_UNREAD = "Error parsing config"


def stage_of(output: str) -> str:
    """Where a served probe failed: ``config`` where vLLM could not read the model's config,
    ``engine`` where the engine failed after."""
    return "config" if _CONFIG_UNREAD in output else "engine"


def _serve(model: Path) -> dict[str, Any]:
    """Serve ``model`` on vLLM's CPU build in a process of its own: served, or the stage it
    failed at (``config`` or ``engine``) and why."""
    # Imported here: the docs extension reads this module's file name, and needs no engine.
    from ray_serve_npu.fake_npu.adapter import FAKE_ENV

    try:
        done = subprocess.run(
            [sys.executable, "-c", _SERVE, str(model)],
            # The KV cache the fake tier gives the engine: without it, the CPU build takes
            # most of the machine's memory for it.
            env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": FAKE_ENV["VLLM_CPU_KVCACHE_SPACE"][0]},
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {
            "served": False,
            "stage": "engine",
            "error": f"no answer within {PROBE_TIMEOUT_S} s",
        }
    output = done.stdout + done.stderr
    if "PROBE-SERVED" in done.stdout:
        return {"served": True}
    return {"served": False, "stage": stage_of(output), "error": _root_error(output)}


def probe(architecture: str, workdir: Path) -> dict[str, Any]:
    """Serve a tiny ``architecture`` on vLLM's CPU build: its class, and served or why not,
    with the stage it failed at: ``build`` (transformers), ``config`` or ``engine`` (vLLM)."""
    from ray_serve_npu.fake_npu.tiny_model import make_tiny_model

    out = workdir / architecture
    record: dict[str, Any] = {"architecture": architecture, "class": PROBES[architecture][0]}
    try:
        # The tier's dense tiny model: each probe takes its tokenizer.
        build(architecture, out, make_tiny_model(workdir / "dense"))
    except Exception as error:  # noqa: BLE001 - recorded: transformers refused the config
        refused = f"{type(error).__name__}: {error}"
        return {**record, "served": False, "stage": "build", "error": refused}
    return {**record, **_serve(out)}


def probe_stand_ins(workdir: Path) -> list[dict[str, Any]]:
    """Serve each tiny model the fake tier stands in with, as the tier builds it."""
    from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS, make_tiny_model

    return [
        {"class": architecture, "model": spec.family, **_serve(make_tiny_model(workdir, spec))}
        for architecture, spec in STAND_IN_SPECS.items()
    ]


def main() -> int:
    import transformers
    import vllm

    with tempfile.TemporaryDirectory(prefix="cpu-architectures-") as workdir:
        results = []
        for architecture in PROBES:
            result = probe(architecture, Path(workdir))
            print(json.dumps(result), flush=True)
            results.append(result)
        stand_ins = probe_stand_ins(Path(workdir) / "stand-ins")
        print(json.dumps(stand_ins), flush=True)
    out = DOCS_DIR / CPU_ARCHITECTURES_FILE
    out.write_text(
        json.dumps(
            {
                "vllm": vllm.__version__,
                # Whose config classes built the models, and read them back in vLLM.
                "transformers": transformers.__version__,
                "date": datetime.date.today().isoformat(),
                "command": "python -m ray_serve_npu_tooling.cpu_architectures",
                "results": results,
                # The fake tier's own tiny models, one per class it stands in for.
                "stand_ins": stand_ins,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
