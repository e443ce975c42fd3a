"""A checkpoint's parameters, counted from its architecture (engine-neutral).

``count_parameters(config)`` reads the language model's config the way derive does
(``Config.text()`` and the model-type table's class defaults, ``model_types.py``) and counts,
per category, the tensors the architecture's modules hold:

- ``embed`` / ``lm_head``: ``vocab × hidden`` each; no head when the embeddings are tied
  (``tie_word_embeddings``, with the config class's default where the file omits it);
- ``attn``: the attention projections as each family builds them (GQA q/k/v/o with
  ``head_dim``; MLA's low-rank ``q_a``/``q_b``/``kv_a``/``kv_b`` projections; the
  Mamba/Mamba2/GDN/KDA/short-conv mixers' projections), i.e. the linear layers a quantization
  method converts;
- ``dense_mlp``, ``shared_experts``, ``routed_experts``, ``router``: the MLPs (gated: three
  matrices, else two);
- ``other``: norms, biases, q/k norms, attention sinks, convolutions, SSM ``A``/``D``/``dt``
  vectors: what stays in the model dtype under every quantization method.

MTP layers (``num_nextn_predict_layers`` and alike) are counted apart (``mtp``): a checkpoint
stores them, an engine loads them only when it speculates with them. Vision / audio towers
(``vision_config`` …) are counted apart too (``towers``), from their own config where it
describes them, else named in ``warnings`` with their likely size.

Where an architecture's count is not exact (a family whose small tensors are not modelled, a
tower from a generic formula) the result carries a warning with the likely error: the count is
never silently approximate. Formulas were read from the model files named in each function
(vLLM 0.32 ``vllm/model_executor/models/`` and transformers 5.19 ``models/``); no code is
taken from them.

The package, by family: ``base.py`` (aliases, categories, small-tensor profiles, the
accumulator), ``decoder.py`` (GQA / MLA decoders, MoE blocks, MTP), ``nas.py``, ``ssm.py``
(Mamba and its hybrids), ``linear_attention.py`` (GDN, short convolutions, lightning
attention), ``legacy.py``, ``encdec.py`` (Whisper, Llama 3.2 Vision's text model),
``draft.py`` (EAGLE-3 drafts), ``afmoe.py``, ``dsv4.py`` (DeepSeek-V4), ``towers.py``,
``towers_named.py`` (towers counted from the modules that build them: DeepSeek-OCR, MiniCPM-V's
resampler, RiceViT, MoonViT, VideoLLaMA3), ``vit.py`` (the towers' shared ViT count) and
``count.py`` (the entry point).

This package imports nothing from ``kvledger.plan``: it counts parameters; bytes, dtypes and
quantization are the planner's (``plan/weights.py``, ``plan/quant_storage.py``).
"""

from __future__ import annotations

from kvledger.derive.params.base import ALIASES, CATEGORIES, MAX_PARAMETERS, Parameters
from kvledger.derive.params.count import count_parameters
from kvledger.derive.params.decoder import moe_layers
from kvledger.derive.params.nas import nas_intermediate_size
from kvledger.derive.params.ssm import nemotron_h_pattern
from kvledger.derive.params.towers import towers, towers_unused

__all__ = ["ALIASES", "CATEGORIES", "MAX_PARAMETERS", "Parameters", "count_parameters",
           "moe_layers", "nas_intermediate_size", "nemotron_h_pattern", "towers",
           "towers_unused"]
