"""Tiny random-initialised transformers models built from config objects (no downloads) and
owners that declare and fill their caches. Shared by the audit tests and the CLI test (which
imports this file as the top-level module ``tiny``, so only absolute imports here).

Every model is fp32 on CPU, head_dim 16, so expected bytes are worked by hand in the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from kvledger import ModelLocalKVScope, ModelLocalKVSpec, RowDriver

VOCAB = 64


def llama() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    # hidden 64 / 4 heads = head_dim 16; 2 KV heads; 2 layers.
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    )
    return LlamaForCausalLM(cfg).eval()


def mistral_sliding(window: int = 4) -> Any:
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    cfg = MistralConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, sliding_window=window,
        max_position_embeddings=128,
    )
    return MistralForCausalLM(cfg).eval()


def qwen3_next() -> Any:
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

    torch.manual_seed(0)
    # layer_types alternate linear_attention / full_attention (full_attention_interval=2).
    cfg = Qwen3NextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_num_value_heads=2, linear_num_key_heads=2, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_conv_kernel_dim=4, num_experts=2,
        num_experts_per_tok=1, moe_intermediate_size=32, shared_expert_intermediate_size=32,
        full_attention_interval=2, max_position_embeddings=128,
    )
    return Qwen3NextForCausalLM(cfg).eval()


def whisper(encoder_layers: int = 2) -> Any:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    # d_model 64 / 4 heads = head_dim 16; 2 decoder layers; encoder output 16 frames
    # (max_source_positions; the input has 2 × 16 mel frames, halved by the stride-2 conv).
    cfg = WhisperConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=encoder_layers, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=16,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1,
    )
    return WhisperForConditionalGeneration(cfg).eval()


def spec(
    name: str = "kv",
    *,
    layers: int = 2,
    kv_heads: int = 2,
    head_dim: int = 16,
    positions: int,
    dtype: Any = "float32",
    rows: RowDriver = RowDriver.MAX_NUM_SEQS,
    rows_fixed: int = 1,
    scope: ModelLocalKVScope = ModelLocalKVScope.REQUEST,
) -> ModelLocalKVSpec:
    return ModelLocalKVSpec(
        name=name, layers=layers, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
        physical_capacity_positions=positions, capacity_source="test", scope=scope,
        rows=rows, rows_fixed=rows_fixed,
        rows_reason="test: calls are serialized" if rows is RowDriver.FIXED else "",
    )


class GenerateOwner(nn.Module):
    """Owns a decoder-only model and the cache it generates into (``self.cache``)."""

    def __init__(
        self, model: Any, specs: Sequence[ModelLocalKVSpec], make_cache: Callable[[], Any]
    ) -> None:
        super().__init__()
        self.model = model
        self.cache: Any = None
        self._specs = list(specs)
        self._make_cache = make_cache

    def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
        return self._specs

    @torch.no_grad()
    def generate(self, batch: int, prompt: int, new: int) -> None:
        """Leaves ``prompt + new - 1`` positions in a dynamic cache (the last generated token
        is never fed back)."""
        self.cache = self._make_cache()
        g = torch.Generator().manual_seed(1)
        ids = torch.randint(3, VOCAB, (batch, prompt), generator=g)
        self.model.generate(
            ids, attention_mask=torch.ones_like(ids), cache=self.cache,
            max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0,
        )


class WhisperOwner(nn.Module):
    """Owns a Whisper-shaped model and its ``EncoderDecoderCache`` (self + cross)."""

    def __init__(self, model: Any, specs: Sequence[ModelLocalKVSpec]) -> None:
        super().__init__()
        self.model = model
        self.cache: Any = None
        self._specs = list(specs)

    def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
        return self._specs

    @torch.no_grad()
    def decode(self, batch: int, steps: int) -> None:
        """Prefill 3 decoder tokens, then ``steps`` single-token steps: 3 + steps positions in
        the self-attention cache; 16 encoder frames in the cross-attention cache."""
        from transformers import DynamicCache, EncoderDecoderCache

        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        g = torch.Generator().manual_seed(2)
        features = torch.randn(batch, 8, 32, generator=g)
        encoded = self.model.model.encoder(features)
        tokens = torch.full((batch, 3), 5)
        for _ in range(steps + 1):
            self.model(
                encoder_outputs=encoded, decoder_input_ids=tokens,
                cache=self.cache, use_cache=True,
            )
            tokens = torch.full((batch, 1), 6)


# Entry points for the CLI test: ``kvledger audit tiny:llama_ok`` etc. Each returns
# (model, run). 2 rows × (5 + 4 - 1) = 8 positions.


def _llama_owner(positions: int) -> tuple[Any, Callable[[], None]]:
    from transformers import DynamicCache

    owner = GenerateOwner(llama(), [spec(positions=positions)], DynamicCache)
    return owner, lambda: owner.generate(batch=2, prompt=5, new=4)


def llama_ok() -> tuple[Any, Callable[[], None]]:
    return _llama_owner(8)


def llama_short() -> tuple[Any, Callable[[], None]]:
    return _llama_owner(7)


def not_a_pair() -> int:
    return 3


def nothing_declared() -> tuple[Any, Callable[[], None]]:
    """A model that declares no cache and whose run fills none: nothing for audit to check."""
    model = nn.Linear(4, 4)
    return model, lambda: None
