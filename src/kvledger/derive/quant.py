"""A checkpoint's quantization, read key by key: one vocabulary per ``quant_method``.

Why a vocabulary per method instead of "anything under quantization_config is weights": the
same block also carries the KV cache scheme (``kv_cache_scheme``, ``kv_cache_quant_algo``),
and a new producer release can add a key that changes the cache. A blanket allowance turns
that key into a silently wrong plan. So each method lists

- the keys that only describe how linear weights / activations are stored (they pass),
- the keys that declare a KV cache scheme (resolved by ``kvdtype.py``, or refused),
- the keys holding module lists or nested structures, each checked for its shape,

and any other key fails closed naming it (``quantization_config.<key>``). Adding a method is
one entry in ``VOCABULARIES``.

The keys come from real configs (``../shared/configs``) and from what vLLM 0.32 reads in
``vllm/model_executor/layers/quantization/`` (each class's ``from_config``).

The KV scheme a block declares is read by ``kvdtype.py`` (the checkpoint's own declaration,
which the native layout follows); what an engine does with it is the engine's rule, with its
layout (``kvledger.plan.engines.vllm.cache_dtype`` for vLLM).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnknownCacheKey, UnsupportedArchitecture

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

# The keys a config (or its text config) may hold the block under. ``compression_config`` is
# the older compressed-tensors name (vLLM ``get_quant_config`` reads it when the first is absent).
QUANT_CONFIG_KEYS = ("quantization_config", "compression_config")

# ModelOpt's KV algorithm names (``kv_cache_quant_algo``, or ``kv_cache_scheme`` written as a
# bare string) → registry name.
MODELOPT_KV = {"FP8": "fp8_e4m3", "NVFP4": "nvfp4", "INT8": "int8"}


class UnknownQuantizationKey(UnknownCacheKey):
    """A key inside a quantization block that the method's vocabulary does not list."""

    def __init__(self, key: str, *, model_type: str, method: str, family: str | None = None):
        where = f" (family {family})" if family else ""
        UnsupportedArchitecture.__init__(
            self,
            f"unsupported: {model_type or '?'} config carries {key!r}, which kvledger's "
            f"{method!r} quantization vocabulary does not list{where}; refusing to guess its "
            "effect on the KV cache",
            model_type=model_type,
        )
        self.key = key


class Vocabulary:
    """What one ``quant_method`` may say, by kind of key.

    A plain class, not a dataclass: this module is on every plan's start-up path, and
    generating dataclass methods costs measurable milliseconds there.
    """

    __slots__ = ("kv_keys", "method", "module_lists", "structured", "weight_keys")

    def __init__(self, method: str, weight_keys: frozenset[str], kv_keys: frozenset[str],
                 module_lists: frozenset[str], structured: frozenset[str]) -> None:
        self.method = method
        # How weights / activations of linear layers are stored: no effect on any cache.
        self.weight_keys = weight_keys
        # Declarations of a KV cache scheme: resolved by ``kv_declaration`` (or refused).
        self.kv_keys = kv_keys
        # Lists of module names or patterns (left unquantized, or targeted): weights only,
        # but the value must be a list of strings.
        self.module_lists = module_lists
        # Keys whose value is a structure with its own checker (``_STRUCTURES``).
        self.structured = structured

    def knows(self, key: str) -> bool:
        return key == "quant_method" or key in self.weight_keys or key in self.kv_keys or \
            key in self.module_lists or key in self.structured


def _vocab(method: str, *, weights: str = "", kv: str = "", modules: str = "",
           structured: str = "") -> Vocabulary:
    return Vocabulary(method, frozenset(weights.split()), frozenset(kv.split()),
                      frozenset(modules.split()), frozenset(structured.split()))


# ModelOpt (NVIDIA): vLLM ``ModelOptQuantConfigBase.from_config`` and the normalisation in
# ``transformers_utils/model_arch_config_convertor._normalize_quantization_config``. Written
# inline (``quant_method: modelopt``) or as hf_quant_config.json (``producer`` +
# ``quantization``); both layouts share these keys.
_MODELOPT = _vocab(
    "modelopt",
    weights="quant_algo group_size moe_quant_algo awq_block_size",
    kv="kv_cache_quant_algo kv_cache_scheme",
    modules="exclude_modules ignore ignored_layers",
    structured="producer config_groups quantized_layers quantization",
)

# compressed-tensors (llm-compressor): vLLM ``CompressedTensorsConfig.from_config``.
_COMPRESSED_TENSORS = _vocab(
    "compressed-tensors",
    weights="format quantization_status global_compression_ratio version sparsity_config "
            "transform_config total_num_heads total_num_kv_heads",
    kv="kv_cache_scheme",
    modules="ignore",
    structured="config_groups",
)

# Block / per-tensor fp8 weights (DeepSeek, Qwen FP8, MiniMax, GLM FP8): vLLM ``Fp8Config``.
# ``dequantize`` (Mistral's Devstral-2 files) is transformers' FineGrainedFP8Config switch to
# dequantize weights at load; vLLM's Fp8Config.from_config does not read it.
_FP8 = _vocab(
    "fp8",
    weights="activation_scheme fmt weight_block_size scale_fmt store_dtype dequantize",
    modules="modules_to_not_convert ignored_layers",
)

# AutoAWQ: vLLM ``AutoAWQConfig.from_config``; transformers ``AwqConfig``. ``do_fuse`` /
# ``fuse_max_seq_len`` size transformers' own fused-attention module, which engines never
# build; neither touches an engine's cache.
_AWQ = _vocab(
    "awq",
    weights="bits w_bit group_size q_group_size zero_point version backend do_fuse "
            "fuse_max_seq_len modules_to_fuse exllama_config",
    modules="modules_to_not_convert",
)

# AutoGPTQ / GPTQModel: vLLM ``AutoGPTQConfig.from_config``; transformers ``GPTQConfig``.
# ``cache_block_outputs`` and ``batch_size`` are calibration-time options.
_GPTQ = _vocab(
    "gptq",
    weights="bits group_size desc_act sym damp_percent damp_auto_increment true_sequential "
            "static_groups model_name_or_path model_file_base_name is_marlin_format "
            "checkpoint_format lm_head dynamic quantizer pack_dtype meta use_exllama "
            "exllama_config tokenizer dataset batch_size cache_block_outputs use_cuda_fp16 "
            "max_input_length backend format autoround_version v2 v2_alpha mse hyb_act "
            "act_group_aware",
    modules="modules_in_block_to_quantize module_name_preceding_first_block "
            "block_name_to_quantize",
)

# bitsandbytes: transformers ``BitsAndBytesConfig`` (vLLM 0.32 has no such method; its
# layout refuses the checkpoint, the native layout plans it).
_BITSANDBYTES = _vocab(
    "bitsandbytes",
    weights="load_in_4bit load_in_8bit _load_in_4bit _load_in_8bit bnb_4bit_compute_dtype "
            "bnb_4bit_quant_type bnb_4bit_use_double_quant bnb_4bit_quant_storage "
            "llm_int8_enable_fp32_cpu_offload llm_int8_has_fp16_weight llm_int8_threshold",
    modules="llm_int8_skip_modules",
)

# gpt-oss MXFP4 experts: vLLM ``Mxfp4Config`` (reads nothing but the method).
_MXFP4 = _vocab("mxfp4", modules="modules_to_not_convert")
# vLLM ``FBGEMMFp8Config.from_config``.
_FBGEMM_FP8 = _vocab("fbgemm_fp8", weights="activation_scale_ub",
                     modules="modules_to_not_convert")
# vLLM ``MoeWNA16Config.from_config``.
_MOE_WNA16 = _vocab("moe_wna16", weights="bits group_size sym zero_point lm_head desc_act",
                    modules="modules_to_not_convert")
# vLLM ``ExpertsInt8Config`` (reads nothing but the method).
_EXPERTS_INT8 = _vocab("experts_int8")

# quant_method (as written, lower-cased) → vocabulary. vLLM's spellings of one family share it.
VOCABULARIES: dict[str, Vocabulary] = {
    "fp8": _FP8,
    "modelopt": _MODELOPT, "modelopt_fp4": _MODELOPT, "modelopt_mxfp8": _MODELOPT,
    "modelopt_mixed": _MODELOPT, "mxfp8": _MODELOPT,
    "compressed-tensors": _COMPRESSED_TENSORS, "compressed_tensors": _COMPRESSED_TENSORS,
    "awq": _AWQ, "auto_awq": _AWQ, "awq_marlin": _AWQ,
    "gptq": _GPTQ, "auto_gptq": _GPTQ, "gptq_marlin": _GPTQ,
    "bitsandbytes": _BITSANDBYTES,
    "mxfp4": _MXFP4, "gpt_oss_mxfp4": _MXFP4,
    "fbgemm_fp8": _FBGEMM_FP8,
    "moe_wna16": _MOE_WNA16,
    "experts_int8": _EXPERTS_INT8,
}


# -- structure checkers ------------------------------------------------------------------------

def _fail(key: str, cfg: Config, method: str, family: str | None) -> UnknownQuantizationKey:
    return UnknownQuantizationKey(key, model_type=cfg.model_type, method=method, family=family)


def _module_list(value: Any, where: str, cfg: Config) -> None:
    if isinstance(value, str):
        return  # a single pattern (some exporters write one instead of a list)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{cfg.model}: {where} must be a list of module names")


# Keys of one compressed-tensors / ModelOpt config group. ``weights`` and
# ``input_activations`` quantize linear layers (what they store, what they read); neither is
# a cache. ``output_activations`` on ``k_proj`` / ``v_proj`` is how older llm-compressor
# releases encoded KV cache quantization, so a non-null one is not waved through.
_GROUP_KEYS = frozenset({"targets", "weights", "input_activations", "format"})


def _config_groups(value: Any, where: str, cfg: Config, method: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{cfg.model}: {where} must be an object of groups")
    for name, group in value.items():
        if not isinstance(group, Mapping):
            raise ConfigError(f"{cfg.model}: {where}.{name} must be an object")
        for key in sorted(group):
            if group[key] is None or key in _GROUP_KEYS:
                continue
            raise _fail(f"{where}.{name}.{key}", cfg, method, None)
        for key in ("weights", "input_activations"):
            scheme = group.get(key)
            if scheme is not None and not isinstance(scheme, Mapping):
                raise ConfigError(f"{cfg.model}: {where}.{name}.{key} must be an object")


# A ModelOpt per-layer entry: how that layer's weights are stored.
_QUANTIZED_LAYER_KEYS = frozenset({"quant_algo", "group_size"})


def _quantized_layers(value: Any, where: str, cfg: Config, method: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{cfg.model}: {where} must be an object of layers")
    for layer, entry in value.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{cfg.model}: {where}[{layer!r}] must be an object")
        for key in sorted(entry):
            if key not in _QUANTIZED_LAYER_KEYS:
                raise _fail(f"{where}[{layer!r}].{key}", cfg, method, None)


def _producer(value: Any, where: str, cfg: Config, method: str) -> None:
    if not isinstance(value, Mapping) or not isinstance(value.get("name", ""), str):
        raise ConfigError(f"{cfg.model}: {where} must be an object with a string name")


def _nested_modelopt(value: Any, where: str, cfg: Config, method: str) -> None:
    # Legacy ModelOpt layout: the keys one level down, under "quantization".
    if not isinstance(value, Mapping):
        raise ConfigError(f"{cfg.model}: {where} must be an object")
    _check_block(value, where, cfg, _MODELOPT, family=None, nested=True)


_STRUCTURES: dict[str, Callable[[Any, str, Config, str], None]] = {
    "config_groups": _config_groups,
    "quantized_layers": _quantized_layers,
    "producer": _producer,
    "quantization": _nested_modelopt,
}


# -- the check ---------------------------------------------------------------------------------


def is_modelopt(block: Mapping[str, Any]) -> bool:
    """Written by NVIDIA ModelOpt (``producer.name``), whatever ``quant_method`` says."""
    producer = block.get("producer")
    return isinstance(producer, Mapping) and producer.get("name") == "modelopt"


def states_no_method(block: Mapping[str, Any]) -> bool:
    """A block vLLM 0.32 reads as no quantization at all: it states no ``quant_method`` and
    ModelOpt did not write it (FastDeploy's Paddle blocks, e.g. ERNIE-4.5's test config).

    vLLM: ``_normalize_quantization_config`` (transformers_utils/
    model_arch_config_convertor.py) gives a ModelOpt block (``producer.name`` "modelopt", or a
    legacy ``quantization.modelopt_quant_config``) its method from ``quant_algo`` and any
    other block ``quant_method`` "" when it states none; no override in
    ``ModelConfig._verify_quantization`` (config/model.py) claims such a block (each keys on
    ``quant_method``, a ModelOpt ``quant_algo`` or a ``--quantization`` the user gave); then
    ``quant_method if quant_method != "" else None`` leaves ``quantization`` None. The weights
    load unquantized, and ``--kv-cache-dtype auto`` keeps the model dtype. Nothing in the
    block reaches a cache, so its keys are not checked (derive says it ignored them).
    """
    method = block.get("quant_method")
    if (method is not None and method != "") or is_modelopt(block):
        return False
    inner = block.get("quantization")
    return not (isinstance(inner, Mapping) and "modelopt_quant_config" in inner)


def ignored_blocks(cfg: Config) -> list[str]:
    """One warning per quantization block vLLM reads as no quantization (``states_no_method``)."""
    return [f"{where} states no quant_method: vLLM reads it as no quantization (weights "
            f"and KV cache in the model dtype) and ignores its keys ({', '.join(sorted(block))})"
            for where, block in quantization_blocks(cfg) if states_no_method(block)]


def vocabulary_for(block: Mapping[str, Any], where: str, cfg: Config) -> Vocabulary:
    """The vocabulary of one quantization block (refusing an unknown ``quant_method``)."""
    method = block.get("quant_method")
    if method is None or method == "":
        if is_modelopt(block):
            return _MODELOPT
        raise UnknownQuantizationKey(f"{where}.quant_method", model_type=cfg.model_type,
                                     method="(none stated)")
    if not isinstance(method, str):
        raise ConfigError(f"{cfg.model}: {where}.quant_method must be a string")
    vocab = VOCABULARIES.get(method.lower())
    if vocab is None:
        raise UnsupportedArchitecture(
            f"unsupported: {where}.quant_method {method!r} is not a quantization method "
            f"kvledger knows (known: {', '.join(sorted(VOCABULARIES))}); refusing to guess "
            "its effect on the KV cache",
            model_type=cfg.model_type,
        )
    if vocab is not _MODELOPT and is_modelopt(block):
        # ModelOpt writes its own keys whatever method it states (DeepSeek-V4-*-NVFP4 says
        # "fp8"): understand both vocabularies.
        return Vocabulary(
            vocab.method,
            vocab.weight_keys | _MODELOPT.weight_keys,
            vocab.kv_keys | _MODELOPT.kv_keys,
            vocab.module_lists | _MODELOPT.module_lists,
            vocab.structured | _MODELOPT.structured,
        )
    return vocab


def _check_block(block: Mapping[str, Any], where: str, cfg: Config, vocab: Vocabulary, *,
                 family: str | None, extra: frozenset[str] = frozenset(),
                 nested: bool = False) -> None:
    for key in sorted(block):
        value = block[key]
        if value is None or key in extra:
            continue
        path = f"{where}.{key}"
        if not vocab.knows(key) or (nested and key == "quantization"):
            raise _fail(path, cfg, vocab.method, family)
        if key in vocab.module_lists:
            _module_list(value, path, cfg)
        elif key in vocab.structured:
            _STRUCTURES[key](value, path, cfg, vocab.method)


def level_blocks(raw: Mapping[str, Any], cfg: Config,
                 prefix: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    """(path, block) for the quantization block(s) written at one level of a config."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key in QUANT_CONFIG_KEYS:
        block = raw.get(key)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise ConfigError(f"{cfg.model}: {prefix}{key} is not an object")
        out.append((f"{prefix}{key}", block))
    return out


def quantization_blocks(cfg: Config) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, block) for each quantization block of ``cfg`` and of its text config."""
    out = level_blocks(cfg.raw, cfg)
    text_key = cfg.text_key
    if text_key is not None:
        out += level_blocks(cfg.raw[text_key], cfg, f"{text_key}.")
    return out


def check_blocks(
    blocks: list[tuple[str, Mapping[str, Any]]], cfg: Config, *, family: str | None = None,
    extra_keys: frozenset[str] = frozenset(),
) -> None:
    """Fail closed on any key of these quantization blocks that their method's vocabulary
    does not list; check module lists and nested structures for shape.

    ``extra_keys``: keys a caller has checked itself and accepts at the top of a block.
    """
    for where, block in blocks:
        if states_no_method(block):
            continue
        vocab = vocabulary_for(block, where, cfg)
        _check_block(block, where, cfg, vocab, family=family, extra=extra_keys)


def check_quantization_config(
    cfg: Config, *, family: str | None = None, extra_keys: frozenset[str] = frozenset()
) -> None:
    """``check_blocks`` over every quantization block of ``cfg`` and of its text config."""
    check_blocks(quantization_blocks(cfg), cfg, family=family, extra_keys=extra_keys)


_HF_QUANT_TOP = frozenset({"producer", "quantization", "quant_method"})


def check_hf_quant_config(hf_quant: Mapping[str, Any], cfg: Config) -> Mapping[str, Any]:
    """ModelOpt's ``hf_quant_config.json``: ``{"producer": ..., "quantization": {...}}``.

    Returns the ``quantization`` block (checked against the ModelOpt vocabulary).
    """
    if not isinstance(hf_quant, Mapping):
        raise ConfigError(f"{cfg.model}: hf_quant_config.json is not an object")
    for key in sorted(hf_quant):
        if key not in _HF_QUANT_TOP:
            raise _fail(f"hf_quant_config.{key}", cfg, "modelopt", None)
    if "producer" in hf_quant and hf_quant["producer"] is not None:
        _producer(hf_quant["producer"], "hf_quant_config.producer", cfg, "modelopt")
    inner = hf_quant.get("quantization")
    if inner is None:
        return {}
    if not isinstance(inner, Mapping):
        raise ConfigError(f"{cfg.model}: hf_quant_config.quantization must be an object, "
                          f"got {inner!r}")
    _check_block(inner, "hf_quant_config.quantization", cfg, _MODELOPT, family=None,
                 nested=True)
    return inner
