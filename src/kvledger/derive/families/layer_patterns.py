"""Decoders whose config class *computes* the per-layer attention pattern when config.json
leaves it out, so a row's constant ``defaults`` cannot carry it.

vLLM reads ``layer_types`` off the loaded config object, i.e. after the class's
``__post_init__`` filled it in; the standard handler, seeing no ``layer_types`` in the file,
would instead put the model-level window on every layer. These handlers first rebuild the
list the class would have built, then place windows as the model file does:

* EXAONE-4 (Exaone4Config, vLLM exaone4.py): ``(i + 1) % sliding_window_pattern`` ≠ 0 slides
  (pattern default 4; the class cannot compute it from a string such as "LLLG").
* OLMo-3 (Olmo3Config; vLLM's Transformers backend): ``(i + 1) % 4`` ≠ 0 slides.
* Laguna (LagunaConfig, vLLM laguna.py): no ``layer_types`` means every layer is full.
* Beam (vLLM 0.33's own BeamConfig, transformers_utils/configs/beam.py, which vLLM loads instead
  of transformers' class): no ``layer_types`` means every layer slides (``all_sliding``).
* Command R7B (Cohere2Config, vLLM commandr.py): ``(i + 1) % sliding_window_pattern`` ≠ 0
  slides (default 4); the window is ``sliding_window + 1`` (``window_extra``) and the head
  size ``hidden_size // num_attention_heads`` (the class overwrites a stated head_dim).
* CWM (CwmConfig; vLLM's Transformers backend): ``i % 4`` ≠ 0 slides (layer 0 full;
  ``first_full``), the pattern fixed at 4.
* Muse Glimmer (vLLM's own MuseGlimmerTextConfig, muse_glimmer.py): the window follows
  ``no_rope_layers`` (RoPE layers slide, NoPE layers are full), default NoPE every 4th layer
  counted back from the last.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.families.standard import (
    FULL,
    SLIDING,
    attention,
    divided_head_dim,
    head_dim,
    stated_layer_types,
)
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived


def _pattern_types(cfg: Config, n: int, every: int, pattern_key: str | None,
                   first_full: bool = False) -> list[str]:
    pattern = cfg.get(pattern_key, every) if pattern_key else every
    if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} config states no layer_types and "
            f"{pattern_key}={pattern!r}, from which its config class cannot build them",
            model_type=cfg.model_type,
        )
    shift = 0 if first_full else 1
    return [SLIDING if (i + shift) % pattern else FULL for i in range(n)]


def derive(
    cfg: Config,
    kv_dtype: str,
    *,
    every: int | None = None,
    pattern_key: str | None = "sliding_window_pattern",
    window_extra: int = 0,
    stated_head_dim: bool = True,
    first_full: bool = False,
    all_sliding: bool = False,
) -> Derived:
    """K/V attention on every layer; ``layer_types`` as stated, else as the config class
    builds it: every ``every``-th layer full (``pattern_key``, when the config class reads
    one, may restate ``every``), or all full when ``every`` is None. Sliding layers keep
    ``sliding_window`` + ``window_extra`` positions; K/V heads and head dim as the standard
    handler reads them (``stated_head_dim=False``: always hidden_size // heads, and a stated
    head_dim that differs is refused, since the model file would not use it; ``first_full``:
    the pattern counts from layer 0, which is full; ``all_sliding``: without ``layer_types``
    every layer slides)."""
    n = cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads", minimum=1)
    kv_heads = cfg.int("num_key_value_heads", heads)
    if stated_head_dim:
        dim = head_dim(cfg, heads, hidden_key="hidden_size")
    else:
        dim = divided_head_dim(cfg, heads, hidden_key="hidden_size")
        if cfg.stated("head_dim") and cfg.int("head_dim") != dim:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} config states head_dim {cfg.int('head_dim')}, "
                f"but its config class sets hidden_size / num_attention_heads = {dim}",
                model_type=cfg.model_type,
            )
    notes: list[str] = []
    types = stated_layer_types(cfg, n, (FULL, SLIDING))
    if types is None and all_sliding:
        types = [SLIDING] * n
        notes.append("no layer_types: the config class makes every layer sliding-window")
    if types is None:
        if every is None:
            types = [FULL] * n
            notes.append("no layer_types: the config class makes every layer full attention")
        else:
            types = _pattern_types(cfg, n, every, pattern_key, first_full)
            notes.append(f"no layer_types: the config class builds them ({types.count(SLIDING)} "
                         f"sliding, {types.count(FULL)} full)")
    window: int | None = None
    if SLIDING in types:
        if "sliding_window" not in cfg or cfg.int("sliding_window") < 1:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} layer_types lists sliding layers but the config "
                "leaves no sliding_window",
                model_type=cfg.model_type,
            )
        window = cfg.int("sliding_window") + window_extra
    layers: list[LayerCache] = [
        attention(i, kv_heads, dim, kv_dtype, window=window if t == SLIDING else None)
        for i, t in enumerate(types)
    ]
    return Derived(layers, notes)


def _default_no_rope_layers(n: int) -> list[int]:
    # vLLM transformers_utils/configs/muse_glimmer.py _default_no_rope_layers: NoPE (0) every
    # 4 layers counted back from the last.
    return [0 if (n - 1 - i) % 4 == 0 else 1 for i in range(n)]


def muse_glimmer(cfg: Config, kv_dtype: str) -> Derived:
    """Muse Glimmer's language model (vLLM muse_glimmer.py ``MuseGlimmerAttention``): a layer
    with RoPE (``no_rope_layers[i] == 1``) slides over ``sliding_window``, a NoPE layer
    attends fully; ``num_key_value_heads`` × ``head_dim``. ``layer_types`` is not what vLLM
    reads; a stated list that disagrees with ``no_rope_layers`` is refused rather than
    guessed (vLLM would follow ``no_rope_layers``, while its engine-level window follows
    ``layer_types``)."""
    n = cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads", minimum=1)
    kv_heads = cfg.int("num_key_value_heads", heads)
    dim = head_dim(cfg, heads, hidden_key="hidden_size")
    stated = cfg.get("no_rope_layers")
    if stated is None:
        rope = _default_no_rope_layers(n)
    elif isinstance(stated, list) and len(stated) == n and all(v in (0, 1) for v in stated):
        rope = [int(v) for v in stated]
    else:
        raise UnsupportedArchitecture(
            f"unsupported: muse_glimmer_text no_rope_layers must list {n} entries of 0/1, "
            f"got {stated!r}",
            model_type=cfg.model_type,
        )
    types = [SLIDING if r == 1 else FULL for r in rope]
    listed = stated_layer_types(cfg, n, (FULL, SLIDING))
    if listed is not None and listed != types:
        raise UnsupportedArchitecture(
            "unsupported: muse_glimmer_text layer_types disagrees with no_rope_layers (vLLM's "
            "muse_glimmer.py slides exactly the RoPE layers); refusing to guess which holds",
            model_type=cfg.model_type,
        )
    window = cfg.int("sliding_window", minimum=1) if SLIDING in types else None
    layers: list[LayerCache] = [
        attention(i, kv_heads, dim, kv_dtype, window=window if t == SLIDING else None)
        for i, t in enumerate(types)
    ]
    notes = [f"iRoPE: {types.count(SLIDING)} RoPE layers slide over {window}, "
             f"{types.count(FULL)} NoPE layers attend fully (no_rope_layers)"]
    return Derived(layers, notes)
