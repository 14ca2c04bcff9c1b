"""A tiny Llama-family model, built offline in seconds, that vLLM's CPU build can serve.

Random weights and a byte-level BPE tokenizer trained here on a few sentences:
what it generates is noise, but every layer of the serving stack handles it as it
would a real model. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import BaseModel

from ray_serve_npu.envs import CACHE_DIR_ENV_VAR

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
    #: Experts each token is routed to (Mixtral only).
    num_experts_per_tok: int = 2

    def model_post_init(self, __context: object) -> None:
        if self.head_dim not in CPU_ATTENTION_HEAD_SIZES:
            raise ValueError(
                f"head_dim={self.head_dim} is not served by vLLM's CPU attention; "
                f"use one of {sorted(CPU_ATTENTION_HEAD_SIZES)}."
            )

    @property
    def family(self) -> str:
        return "mixtral" if self.num_local_experts else "llama"

    def digest(self) -> str:
        # The dense spec hashes as it did before the MoE fields existed.
        dense = {"num_local_experts", "num_experts_per_tok"}
        fields = self.model_dump_json(exclude=set() if self.num_local_experts else dense)
        return hashlib.sha256(fields.encode()).hexdigest()[:12]


#: The tiny mixture-of-experts model the fake tier serves for data parallel.
TINY_MOE_SPEC = TinyModelSpec(num_local_experts=4, num_experts_per_tok=2)


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


def _write_model(spec: TinyModelSpec, vocab_size: int, out: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM

    torch.manual_seed(spec.seed)
    moe = {
        "num_local_experts": spec.num_local_experts,
        "num_experts_per_tok": spec.num_experts_per_tok,
    }
    config_cls, model_cls, extra = (
        (MixtralConfig, MixtralForCausalLM, moe)
        if spec.num_local_experts
        else (LlamaConfig, LlamaForCausalLM, {})
    )
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
