"""Language models vLLM 0.32 serves inside multimodal wrappers whose per-layer windows follow a
rule of their own (the wrappers themselves are rows of the model-type table; encoders hold no
KV cache).

* EXAONE 4.5 (``exaone4_5_text``, read through transformers' ``Exaone4Config``): vLLM
  exaone4.py ``Exaone4Attention``: a layer slides iff ``config.layer_types[i] ==
  "sliding_attention"``, with ``config.sliding_window``. ``Exaone4Config.__post_init__`` builds
  ``layer_types`` when the file has none: layer i is full iff ``(i + 1) %
  sliding_window_pattern == 0`` (an integer; 4 by default); with ``sliding_window`` None it
  sets the pattern to 0 and then divides by it, so such a file does not load.
  A stated ``layer_types`` with ``sliding_window`` None: vLLM passes no window, so every layer
  attends globally.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.families.standard import (
    FULL,
    SLIDING,
    attention,
    heads_and_dim,
    stated_layer_types,
)
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived


def _layers(text: Config, kv_dtype: str, types: list[str], window: int | None) -> list[LayerCache]:
    _, kv_heads, dim = heads_and_dim(text)
    return [
        attention(i, kv_heads, dim, kv_dtype, window=window if t == SLIDING else None)
        for i, t in enumerate(types)
    ]


def _derived(
    text: Config, kv_dtype: str, types: list[str], window: int | None, what: str
) -> Derived:
    n = len(types)
    local = types.count(SLIDING)
    if window is None:
        # The model file passes per_layer_sliding_window=config.sliding_window (None) and the
        # model-level window is None too: every layer attends globally.
        note = f"sliding_window is unset: all {n} layers attend globally"
    else:
        note = f"{local} {what} layers slide (window {window}), {n - local} attend globally"
    return Derived(_layers(text, kv_dtype, types, window), [note])


def _window(text: Config) -> int | None:
    if "sliding_window" not in text:
        return None
    window = text.int("sliding_window")
    return window or None  # vLLM ModelConfig: 0 means no window


def exaone4(text: Config, kv_dtype: str) -> Derived:
    """EXAONE 4 / 4.5 text model: windows from ``layer_types``, else Exaone4Config's rule."""
    n = text.int("num_hidden_layers")
    window = _window(text)
    types = stated_layer_types(text, n, (FULL, SLIDING))
    if types is None:
        if window is None:
            # Exaone4Config sets the pattern to 0 and then divides by it: transformers (so
            # vLLM) cannot load such a file.
            raise ConfigError(
                f"{text.model}: exaone4 config has neither layer_types nor sliding_window; "
                "transformers' Exaone4Config cannot build layer_types for it"
            )
        else:
            pattern = text.get("sliding_window_pattern")
            if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
                raise ConfigError(
                    f"{text.model}: exaone4 config has no layer_types and sliding_window_pattern "
                    f"{pattern!r} is not a positive integer (Exaone4Config builds layer_types "
                    "from an integer pattern)"
                )
            types = [FULL if (i + 1) % pattern == 0 else SLIDING for i in range(n)]
    return _derived(text, kv_dtype, types, window, "sliding")
