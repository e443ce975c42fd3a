"""Encoder-decoder and cross-attention models: Whisper (decoder self-attention plus
cross-attention over the audio encoder's frames) and mllama / Llama-3.2-Vision (a text decoder
whose ``cross_attention_layers`` attend to vision-encoder tokens instead of themselves).

The encoders themselves cache nothing: they run once per request (Whisper) or per image
(mllama) and their outputs are written into the cross-attention K/V once. That cross K/V is
per-request state sized by the encoder length, not by the decoded length.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.families.standard import attention, head_dim, heads_and_dim
from kvledger.derive.layers import CrossAttention, LayerCache
from kvledger.derive.registry import Derived


def _cross(
    index: int, kv_heads: int, dim: int, dtype: str, encoder_len: int, note: str
) -> CrossAttention:
    return CrossAttention(
        index=index, dtype=dtype, k_heads=kv_heads, k_dim=dim, v_heads=kv_heads, v_dim=dim,
        encoder_len=encoder_len, note=note,
    )


def whisper(cfg: Config, kv_dtype: str) -> Derived:
    """Whisper (vLLM whisper.py): each of ``decoder_layers`` layers has causal self-attention
    (FullAttentionSpec) and cross-attention (CrossAttentionSpec), both with
    ``decoder_attention_heads`` KV heads of ``d_model // decoder_attention_heads``. The encoder
    output is ``max_source_positions`` frames (1500 for 30 s of audio), the cross K/V length.
    """
    heads = cfg.int("decoder_attention_heads")
    dim = head_dim(cfg, heads, hidden_key="d_model")
    frames = cfg.int("max_source_positions")
    n = cfg.int("decoder_layers")
    # Self-attention caches first, then the cross-attention caches of the same layers, so a
    # run-length table reads "0-3 full" / "0-3 cross" rather than alternating rows.
    layers: list[LayerCache] = [
        attention(i, heads, dim, kv_dtype, note="decoder self-attention") for i in range(n)
    ]
    layers.extend(
        _cross(i, heads, dim, kv_dtype, frames, f"cross-attention over {frames} encoder frames")
        for i in range(n)
    )
    notes = [
        f"encoder ({cfg.get('encoder_layers')} layers) caches nothing; each of the {n} decoder "
        f"layers holds self-attention K/V plus cross-attention K/V over {frames} encoder frames",
        f"decoder positions are bounded by max_target_positions={cfg.get('max_target_positions')}",
    ]
    return Derived(layers, notes, {"encoder_positions": frames})


def _vision_tokens_per_image(cfg: Config) -> tuple[int, str]:
    """Vision tokens one image contributes at the most tiles (vLLM mllama.py, a V0-only model
    there, ``calc_token_per_chunk``: (image_size // 14)² + 1 class token per tile, × tiles;
    the processor allows up to ``max_num_tiles`` tiles per image). The patch size is read from
    ``vision_config.patch_size`` (14 in every published mllama config) rather than assumed."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, Mapping):
        raise ConfigError(f"{cfg.model}: mllama config has no vision_config")
    vcfg = Config(vision, model=cfg.model)
    size, patch, tiles = (
        vcfg.int("image_size"), vcfg.int("patch_size"), vcfg.int("max_num_tiles")
    )
    if patch < 1 or size % patch:
        raise ConfigError(f"{cfg.model}: image_size {size} is not a multiple of patch {patch}")
    per_tile = (size // patch) ** 2 + 1
    how = f"{tiles} tiles × ((image_size {size} // patch {patch})² + 1) = {tiles * per_tile}"
    return tiles * per_tile, how


def mllama(text: Config, kv_dtype: str) -> Derived:
    """mllama (vLLM mllama.py): text layers listed in ``cross_attention_layers`` are
    cross-attention layers over the vision tokens (``num_key_value_heads`` × ``hidden_size //
    num_attention_heads``) and have no self-attention cache; all other layers are Llama
    self-attention layers. ``num_hidden_layers`` counts both kinds.
    """
    cfg = text.parent
    if cfg is None:
        raise ConfigError(f"{text.model}: mllama text config outside its wrapper (no "
                          "vision_config to size the cross-attention)")
    n = text.int("num_hidden_layers")
    cross_idx = text.require("cross_attention_layers")
    if not isinstance(cross_idx, list) or any(
        isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n for i in cross_idx
    ):
        raise ConfigError(f"{cfg.model}: cross_attention_layers must list layer indices < {n}")
    encoder_len, how = _vision_tokens_per_image(cfg)
    _, kv_heads, dim = heads_and_dim(text)
    layers: list[LayerCache] = []
    for i in range(n):
        if i in cross_idx:
            layers.append(
                _cross(i, kv_heads, dim, kv_dtype, encoder_len, f"cross-attention: {how}")
            )
        else:
            layers.append(attention(i, kv_heads, dim, kv_dtype))
    notes = [
        f"{len(cross_idx)} cross-attention layer(s) over {encoder_len} vision tokens per image "
        f"({how}); vLLM sizes the encoder by the tiles of the last group of consecutive images, "
        "so each further image in that group adds as much again",
        "the vision encoder caches nothing",
    ]
    return Derived(layers, notes, {"encoder_positions": encoder_len})
