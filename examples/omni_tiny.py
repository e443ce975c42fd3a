"""A tiny omni-style model built from config objects (no download): a *thinker* (the causal LM
an engine serves) and, inside it, a *talker* that keeps its own transformers ``StaticCache``
— the cache kind seed A was written for — and declares it (``HasModelLocalKV``).

The README's runnable example (torch extra), from the repository's root::

    kvledger audit examples.omni_tiny:build
    kvledger plan meta-llama/Meta-Llama-3.1-8B --gpu H100-80GB \
        --model-local-kv-from examples.omni_tiny:build

and imported as the top-level module ``omni_tiny`` by the CLI tests
(``tests/cli/test_cli_model_local.py``), so only absolute imports here. fp32 on CPU,
head_dim 16, so every byte is worked by hand in the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from kvledger import ModelLocalKVScope, ModelLocalKVSpec, RowDriver, spec_from_hf_config

VOCAB = 64
TALKER_CACHE_LEN = 32  # StaticCache(max_cache_len=32): the capacity is this constant


def thinker_config() -> Any:
    from transformers import LlamaConfig

    # hidden 64 / 4 heads = head_dim 16; 2 KV heads; 2 layers; 128 positions.
    return LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    )


class Talker(nn.Module):
    """Speaks through a small Qwen2 LM into a ``StaticCache`` it owns (calls are serialized:
    one row)."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import Qwen2Config, Qwen2ForCausalLM

        # hidden 64 / 4 heads = head_dim 16; 2 KV heads; 3 layers.
        cfg = Qwen2Config(
            vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        )
        self.lm = Qwen2ForCausalLM(cfg).eval()
        self.cache: Any = None

    def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
        # Geometry from the config the cache is built from (the seed's helper).
        return [spec_from_hf_config(
            self.lm.config, name="talker", physical_capacity_positions=TALKER_CACHE_LEN,
            capacity_source=f"StaticCache(max_cache_len={TALKER_CACHE_LEN})",
            scope=ModelLocalKVScope.MODEL, dtype=self.lm.dtype, rows=RowDriver.FIXED,
            rows_reason="talker calls are serialized",
        )]

    @torch.no_grad()
    def speak(self, prompt: int = 5, new: int = 3) -> None:
        from transformers import StaticCache

        self.cache = StaticCache(config=self.lm.config, max_cache_len=TALKER_CACHE_LEN)
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(3, VOCAB, (1, prompt), generator=g)
        self.lm.generate(ids, attention_mask=torch.ones_like(ids), cache=self.cache,
                         max_new_tokens=new, min_new_tokens=new, do_sample=False,
                         pad_token_id=0)


class Omni(nn.Module):
    """Thinker (what the engine serves and pages) + talker (what it never sees)."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import LlamaForCausalLM

        torch.manual_seed(0)
        self.thinker = LlamaForCausalLM(thinker_config()).eval()
        self.talker = Talker()


def build() -> tuple[Any, Callable[[], None]]:
    """The target both commands take: ``(model, run)``; ``run`` fills the talker's cache."""
    model = Omni()
    return model, lambda: model.talker.speak()
