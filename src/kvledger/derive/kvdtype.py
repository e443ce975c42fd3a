"""The KV cache element type a checkpoint declares, and the one derive uses.

``kv_declaration`` reads the KV scheme out of the quantization blocks (checked first against
their method's vocabulary by ``quant.py``) and hf_quant_config.json; ``resolve_kv_dtype``
picks an explicit option, else that declaration, else the config's dtype. What an *engine*
does with the declaration under ``--kv-cache-dtype auto`` is the engine's rule and lives with
its layout (``kvledger.plan.engines.vllm.cache_dtype`` for vLLM).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.quant import (
    MODELOPT_KV,
    check_hf_quant_config,
    check_quantization_config,
    quantization_blocks,
    states_no_method,
    vocabulary_for,
)

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any


# -- the KV scheme a checkpoint declares -------------------------------------------------------


def kv_scheme_dtype(scheme: Any, where: str, model: str) -> str:
    """A KV scheme → registry name: a compressed-tensors-style object (``num_bits``, ``type``)
    or a ModelOpt algorithm name (``"FP8"``; Qwen3-32B-FP8-Static-PerTensor writes the name
    under ``kv_cache_scheme``). Unknown schemes raise rather than fall back."""
    if isinstance(scheme, str):
        name = MODELOPT_KV.get(scheme.upper())
        if name is None:
            raise ConfigError(f"{model}: unrecognised {where} {scheme!r} "
                              f"(known: {', '.join(MODELOPT_KV)})")
        return name
    if not isinstance(scheme, Mapping):
        raise ConfigError(f"{model}: {where} must be an object or an algorithm name")
    bits, kind = scheme.get("num_bits"), scheme.get("type")
    if bits == 8 and kind == "float":
        return "fp8_e4m3"
    if bits == 8 and kind == "int":
        return "int8"
    if bits == 4 and kind == "float":
        return "nvfp4"
    raise ConfigError(f"{model}: unrecognised {where} num_bits={bits!r} type={kind!r}")


class KVDeclaration:
    """The KV cache element type a checkpoint declares, and where it says so."""

    __slots__ = ("dtype", "key", "source")

    def __init__(self, dtype: str, source: str, key: str) -> None:
        self.dtype = dtype  # registry name
        self.source = source  # "quantization_config" | "hf_quant_config"
        self.key = key  # the key path that declared it

    def __repr__(self) -> str:
        return f"KVDeclaration({self.dtype!r}, {self.source!r}, {self.key!r})"


def _kv_in_block(block: Mapping[str, Any], where: str, cfg: Config) -> KVDeclaration | None:
    if states_no_method(block):
        return None
    vocab = vocabulary_for(block, where, cfg)
    layers: list[tuple[str, Mapping[str, Any]]] = [(where, block)]
    inner = block.get("quantization")
    if isinstance(inner, Mapping):
        layers.insert(0, (f"{where}.quantization", inner))
    for path, level in layers:
        for key in ("kv_cache_scheme", "kv_cache_quant_algo"):
            if key in vocab.kv_keys and level.get(key) is not None:
                dtype = kv_scheme_dtype(level[key], f"{path}.{key}", cfg.model)
                return KVDeclaration(dtype, "quantization_config", f"{path}.{key}")
    return None


def kv_declaration(cfg: Config, hf_quant: Mapping[str, Any] | None) -> KVDeclaration | None:
    """What the checkpoint says its KV cache holds: the text config's block, then the outer
    one, then hf_quant_config.json. ``None``: no KV scheme (the model dtype is used)."""
    # hf_quant_config.json is checked even when an inline block decides, as the weights
    # estimate reads it too (a non-object ``quantization`` is one line, not a crash there).
    inner = check_hf_quant_config(hf_quant, cfg) if hf_quant is not None else None
    blocks = quantization_blocks(cfg)
    # The text config's own block first (it is the language model's).
    blocks.sort(key=lambda p: 0 if cfg.text_key and p[0].startswith(cfg.text_key) else 1)
    for where, block in blocks:
        found = _kv_in_block(block, where, cfg)
        if found is not None:
            return found
    if inner is not None:
        algo = inner.get("kv_cache_quant_algo")
        if algo is not None:
            dtype = kv_scheme_dtype(algo, "hf_quant_config.quantization.kv_cache_quant_algo",
                                    cfg.model)
            return KVDeclaration(dtype, "hf_quant_config",
                                 "hf_quant_config.quantization.kv_cache_quant_algo")
    return None


# -- the KV element type derive uses -----------------------------------------------------------


def resolve_kv_dtype(
    cfg: Config, hf_quant: Mapping[str, Any] | None, explicit: str | None
) -> tuple[str, str]:
    """(registry name, where it came from): an explicit option > the checkpoint's KV scheme >
    the config's dtype. Every quantization block is checked against its vocabulary first, so
    an unknown key fails closed whichever family the model belongs to."""
    check_quantization_config(cfg)
    declared = kv_declaration(cfg, hf_quant)
    if explicit is not None and explicit != "auto":
        return resolve_dtype(explicit).name, "option"
    if declared is not None:
        return declared.dtype, declared.source
    stated = stated_dtype(cfg)
    if stated is None:
        # transformers loads a config without a dtype in float32: a fact, not a guess.
        return "float32", "default (config states no dtype; transformers loads float32)"
    return resolve_dtype(stated).name, "config"


def stated_dtype(cfg: Config) -> str | None:
    """The dtype vLLM reads from the config: the top level's own, else the text config's
    (vllm/transformers_utils/model_arch_config_convertor.py ``get_torch_dtype``: ``hf_config.
    dtype``, then ``get_text_config().dtype`` for multimodal models whose root states none).
    llava-v1.6-mistral states float16 at the top and bfloat16 in text_config: vLLM runs fp16.
    Then, as vLLM, the vision config's and the encoder config's."""
    stated = cfg.dtype() or cfg.text().dtype()
    for key in ("vision_config", "encoder_config"):
        sub = cfg.raw.get(key)
        if stated is None and isinstance(sub, Mapping):
            stated = Config(sub, model=cfg.model).dtype()
    return stated


def model_dtype(cfg: Config) -> str:
    """The weights' / activations' dtype the config states (float32 when it states none)."""
    stated = stated_dtype(cfg)
    return resolve_dtype(stated).name if stated else "float32"


# Where a KV dtype came from when it is the checkpoint's own KV scheme, not the model dtype.
DECLARED_KV_SOURCES = ("quantization_config", "hf_quant_config")
SERVED_FLOAT32_NOTE = ("float32 checkpoint served in bfloat16 (vLLM --dtype auto): KV cache in "
                       "bfloat16")


def served_kv_dtype(kv_dtype: str, kv_dtype_source: str, explicit: str | None) -> str | None:
    """The KV dtype an engine stores under ``--dtype auto`` when it is not derive's: a float32
    checkpoint (or one stating no dtype, which transformers loads in float32) is served in
    bfloat16 (vLLM config/model.py ``_resolve_auto_dtype`` on SM80+ for the generate runner
    kvledger plans — a pooling runner would take float16; SGLang and kvledger's native layout
    do the same), so its cache, following the model dtype, is bfloat16. None
    when derive's dtype stands: an explicit ``--kv-cache-dtype``, the checkpoint's own KV
    scheme, or a 16-bit model."""
    if explicit not in (None, "auto") or kv_dtype_source in DECLARED_KV_SOURCES:
        return None
    return "bfloat16" if kv_dtype == "float32" else None
