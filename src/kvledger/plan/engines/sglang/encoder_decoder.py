"""SGLang 0.5.23's token pool for its two encoder-decoder models with a KV slot per cross layer.

SGLang has no separate cross-attention cache: a cross-attention layer is a ``RadixAttention``
with ``is_cross_attention=True`` whose encoder K/V live in the same token pool as the decoder's
self-attention K/V, in a slot of its own (its own ``layer_id``). The pool configurator
(``model_executor/pool_configurator.py``: ``DefaultPoolConfigurator._compute_cell_size``) sizes
that pool with ModelConfig's *one* KV head count and head dim (``configs/model_config.py``:
``get_total_num_kv_heads``, ``_derive_model_shapes``: ``head_dim = hidden_size //
num_attention_heads`` when the config states none) times the layer count
``resolve_layer_indices`` gives (``model_runner_components/layer_setup.py``:
``_compute_model_num_layers`` = ``max(num_hidden_layers, num_attention_layers)``). So:

* **Mllama** (``models/mllama.py``: ``MllamaTextModel.__init__`` builds one layer per
  ``range(config.num_hidden_layers)``, a cross-attention layer at each id of
  ``cross_attention_layers``, each with that ``layer_id``): the text config's
  ``num_hidden_layers`` slots — self- and cross-attention alike — of the text config's
  ``num_key_value_heads`` × ``head_dim``. Oracle case cov-mllama: 4 layers (one of them
  cross) × 8 heads × (128 + 128) × 2 B = 16,384 B/token.
* **Whisper** (``ModelConfig._derive_model_shapes``'s Whisper branch:
  ``num_attention_layers = encoder_layers + 2 × decoder_layers``, because
  ``models/whisper.py``'s ``WhisperDecoderLayer`` numbers decoder self-attention
  ``encoder_layers + i`` and cross-attention ``encoder_layers + decoder_layers + i``; the
  encoder's own ids ``0 .. encoder_layers − 1`` get slots too, though nothing is written
  there). The heads and dim are what transformers' ``WhisperConfig.attribute_map`` hands
  SGLang: ``num_key_value_heads`` and ``num_attention_heads`` are ``encoder_attention_heads``,
  ``hidden_size`` is ``d_model``. Oracle case cov-whisper (whisper-tiny): (4 + 2 × 4) = 12
  slots × 6 heads × (64 + 64) × 2 B (float16) = 18,432 B/token.

Each request's encoder input also takes pool entries (``managers/schedule_batch.py``:
``prepare_encoder_info_extend`` carves the encoder's ``out_cache_loc`` out of the request's
tokens): Whisper pads every request with ``max_source_positions`` dummy tokens
(``WhisperForConditionalGeneration.pad_input_ids``), so ``encoder_tokens`` counts them in what
one request holds; Mllama's image tokens depend on the request (``MllamaForConditionalGeneration
.pad_input_ids``: media × tiles × patches) and are not counted.

Neither model class splits its layers across pipeline stages (no ``start_layer`` /
``end_layer``), so pipeline parallelism is refused for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.derive.layers import Attention
from kvledger.records import record

MLLAMA = "MllamaForConditionalGeneration"
WHISPER = "WhisperForConditionalGeneration"
ARCHS = frozenset({MLLAMA, WHISPER})


@record(frozen=True)
class SlotPool:
    """SGLang's view of an encoder-decoder model's token pool: ``slots`` layers of one
    geometry (``kv_heads`` × ``head_dim`` for K and for V)."""

    slots: int
    kv_heads: int
    head_dim: int


class Unreproduced(ValueError):
    """The config says something this rule does not cover (the message names it)."""


def _count(view: Mapping[str, Any], key: str) -> int:
    value = view.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Unreproduced(f"SGLang sizes this model's pool from {key}, which is {value!r}")
    return value


def slot_pool(arch: str, text: Mapping[str, Any],
              attention: Sequence[Attention]) -> SlotPool:
    """The pool SGLang sizes for ``arch`` (one of ``ARCHS``), from its text config.

    ``attention`` (kvledger's decoder self- and cross-attention facts) must agree with the
    geometry SGLang reads — a model whose decoder heads differ from what its pool slots hold
    would not even run under SGLang — else it is refused, naming the difference."""
    if arch == WHISPER:
        # WhisperConfig.attribute_map: num_key_value_heads / num_attention_heads →
        # encoder_attention_heads, hidden_size → d_model; getattr(encoder_layers, 0).
        heads = q_heads = _count(text, "encoder_attention_heads")
        hidden = _count(text, "d_model")
        encoder = text.get("encoder_layers", 0)
        if isinstance(encoder, bool) or not isinstance(encoder, int) or encoder < 0:
            raise Unreproduced(f"SGLang counts encoder_layers slots, which is {encoder!r}")
        slots = max(encoder, encoder + 2 * _count(text, "decoder_layers"))
    else:
        q_heads = _count(text, "num_attention_heads")
        heads = _count(text, "num_key_value_heads") if "num_key_value_heads" in text else \
            q_heads
        hidden = _count(text, "hidden_size")
        slots = _count(text, "num_hidden_layers")
    # _derive_model_shapes: a stated head_dim, else hidden_size // num_attention_heads.
    stated = text.get("head_dim")
    head_dim = stated if isinstance(stated, int) and not isinstance(stated, bool) and \
        stated > 0 else hidden // q_heads
    shapes = {(a.k_heads, a.k_dim, a.v_heads, a.v_dim) for a in attention}
    if shapes != {(heads, head_dim, heads, head_dim)}:
        raise Unreproduced(
            f"SGLang's pool slots hold {heads} KV heads × {head_dim} (ModelConfig), the "
            f"decoder's attention layers {sorted(shapes)}; not reproduced")
    return SlotPool(slots, heads, head_dim)


def encoder_tokens(arch: str, config: Mapping[str, Any]) -> int:
    """Pool entries every request's encoder input takes (0 when none is fixed)."""
    if arch != WHISPER:
        return 0
    frames = config.get("max_source_positions")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames <= 0:
        raise Unreproduced(f"SGLang pads each Whisper request with max_source_positions "
                           f"tokens, which is {frames!r}")
    return frames
