"""The KV cache dtype vLLM 0.32 stores, from ``--kv-cache-dtype`` and the checkpoint.

An explicit option wins. Under ``auto`` vLLM adopts a checkpoint's KV scheme in two places,
and nowhere else (every reference is vLLM 0.32.0 source):

1. ``EngineArgs.create_engine_config`` (engine/arg_utils.py) calls
   ``resolve_kv_cache_dtype_string`` (utils/torch_utils.py), which reads only
   ``hf_config.quantization_config`` and only when its ``quant_method`` starts with
   ``modelopt`` (``get_kv_cache_quant_algo_string``). That dict is config.json's top-level
   ``quantization_config``, or, when config.json has none, the model directory's
   ``hf_quant_config.json`` (transformers_utils/config.py ``get_config``). ModelOpt's own
   ``quant_method`` is set beforehand by ``_normalize_quantization_config``
   (transformers_utils/model_arch_config_convertor.py): a ``producer.name`` of ``modelopt``
   with a ``quantization.quant_algo`` of FP8 → ``modelopt``, NVFP4 → ``modelopt_fp4``, any
   other algorithm → ``ValueError("Unknown ModelOpt quant algo")``.
2. ``Attention.__init__`` (model_executor/layers/attention/attention.py): a quantization
   config carrying a compressed-tensors ``kv_cache_scheme`` turns ``auto`` into ``fp8`` for
   that layer *and* for ``cache_config`` (so for every layer built after it). ``MLAAttention``
   has no such branch, and ``CompressedTensorsConfig.get_quant_method`` hands its KV method
   (``CompressedTensorsKVCacheMethod``, which validates the scheme) to ``Attention`` only.

Everything else stays ``auto``: the model dtype (``kv_cache_dtype_str_to_dtype``). fp8
checkpoints without a KV scheme (``quant_method: fp8``), hf_quant_config.json files without a
ModelOpt producer, and inline ModelOpt blocks without ``quant_method`` all keep the model
dtype, whatever KV scheme they state.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.derive.layers import Kind, ModelFacts
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart, engine_words

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# vLLM ``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP`` (utils/torch_utils.py).
_MODELOPT_TO_VLLM = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}
# ``_normalize_quantization_config``: ModelOpt algorithms → vLLM quant_method.
_MODELOPT_FP8_ALGOS = frozenset({"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"})
# vLLM 0.32 ``QUANTIZATION_METHODS`` (model_executor/layers/quantization/__init__.py):
# a checkpoint naming another method is refused at start-up (``ModelConfig._verify_quantization``).
VLLM_QUANTIZATION_METHODS = frozenset({
    "awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4",
    "modelopt_mxfp8", "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin",
    "humming", "compressed-tensors", "experts_int8", "quark", "moe_wna16", "torchao", "inc",
    "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "online", "mxfp8",
})
# vLLM 0.32 ``DEPRECATED_QUANTIZATION_METHODS`` (same file): ``ModelConfig._verify_quantization``
# (config/model.py) refuses them unless ``--allow-deprecated-quantization`` is given (held-out
# case: Meta-Llama-3.1-405B-Instruct-FP8, fbgemm_fp8); with it they load with a warning.
VLLM_DEPRECATED_QUANTIZATION_METHODS = frozenset({"fbgemm_fp8", "fp_quant"})
# Attention kinds vLLM builds with ``Attention`` (or a subclass: sliding window, chunked
# local, cross); MLA layers are ``MLAAttention``, indexers and states are neither.
ATTENTION_KINDS = frozenset({Kind.FULL, Kind.SLIDING, Kind.CHUNKED, Kind.CROSS})


class CacheDtype:
    """``cache_config.cache_dtype`` as vLLM resolves it, and why (a plain class: no dataclass
    generation on the plan start-up path)."""

    __slots__ = ("cache_dtype", "reason", "source")

    def __init__(self, cache_dtype: str, source: str, reason: str) -> None:
        self.cache_dtype = cache_dtype  # vLLM's string: "auto", "fp8", "fp8_e4m3", "nvfp4", ...
        self.source = source  # "option", "checkpoint", "model dtype"
        self.reason = reason  # one line a user can check


def checkpoint_quant_config(
    config: Mapping[str, Any], hf_quant_config: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """The dict vLLM sets as ``hf_config.quantization_config`` (a copy), and its origin.

    transformers_utils/config.py ``get_config``: config.json's top-level
    ``quantization_config``; when absent, ``hf_quant_config.json`` from the model directory.
    """
    inline = config.get("quantization_config")
    if isinstance(inline, Mapping):
        return dict(inline), "config.json quantization_config"
    if isinstance(hf_quant_config, Mapping):
        return dict(hf_quant_config), "hf_quant_config.json"
    return None, ""


def normalized_quant_method(qc: Mapping[str, Any], where: str,
                            release: VllmRelease | None = None) -> str:
    """``_normalize_quantization_config``: the ``quant_method`` vLLM works with."""
    producer = qc.get("producer")
    name = producer.get("name") if isinstance(producer, Mapping) else None
    inner = qc.get("quantization", {})
    legacy = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    method = qc.get("quant_method", "")
    if name == "modelopt" or legacy:
        algo = inner.get("quant_algo") if isinstance(inner, Mapping) else None
        if algo is not None:
            upper = str(algo).upper()
            if upper in _MODELOPT_FP8_ALGOS:
                method = "modelopt"
            elif upper == "NVFP4":
                method = "modelopt_fp4"
            elif upper == "MIXED_PRECISION" and release is not None \
                    and release.modelopt_mixed_precision:
                method = "modelopt_mixed"
            else:
                raise VllmRefusesToStart(
                    f"{engine_words(release)} refuses to start: Unknown ModelOpt quant algo: "
                    f"{algo} "
                    f"({where}: only FP8 and NVFP4 are read from a ModelOpt "
                    "'quantization' block)"
                )
    if not isinstance(method, str):
        return ""
    return method.lower().replace("compressed_tensors", "compressed-tensors")


def modelopt_kv_cache_dtype(qc: Mapping[str, Any], method: str) -> str | None:
    """vLLM ``get_kv_cache_quant_algo_string``: the cache dtype a ModelOpt block asks for.

    ``None`` when the method is not ModelOpt or no KV algorithm is stated; ``"auto"`` for one
    vLLM does not recognise (it warns and falls back).
    """
    if not method.startswith("modelopt"):
        return None
    inner = qc.get("quantization", qc)
    if not isinstance(inner, Mapping):
        inner = qc
    # The same ``or`` chain as vLLM: the first truthy of these four wins.
    algo = (inner.get("kv_cache_scheme") or qc.get("kv_cache_scheme")
            or inner.get("kv_cache_quant_algo") or qc.get("kv_cache_quant_algo"))
    if isinstance(algo, Mapping):
        if algo.get("dynamic") is False and algo.get("num_bits") == 8 and \
                algo.get("type") == "float":
            algo = "fp8"
        elif algo.get("num_bits") == 4 and algo.get("type") == "float":
            algo = "nvfp4"
        else:
            return "auto"
    if isinstance(algo, str):
        return _MODELOPT_TO_VLLM.get(algo.lower(), "auto")
    return None


def _model_quant_config(
    config: Mapping[str, Any], qc: dict[str, Any] | None
) -> Mapping[str, Any] | None:
    """The block vLLM builds its ``QuantizationConfig`` from (weight_utils.get_quant_config):
    ``hf_config.quantization_config``, else the text config's, else ``compression_config``."""
    if qc is not None:
        return qc
    sub = config.get("text_config")
    if isinstance(sub, Mapping) and isinstance(sub.get("quantization_config"), Mapping):
        return dict(sub["quantization_config"])
    compression = config.get("compression_config")
    return dict(compression) if isinstance(compression, Mapping) else None


def validate_compressed_tensors_kv_scheme(scheme: Mapping[str, Any],
                                          release: VllmRelease | None = None) -> None:
    """vLLM ``CompressedTensorsKVCacheMethod.validate_kv_cache_scheme``: what it accepts."""
    kind, bits = scheme.get("type"), scheme.get("num_bits")
    if kind != "float" or bits != 8:
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: Currently supported kv cache "
            "quantization is "
            f"num_bits=8, type=float, however received num_bits={bits}, type={kind} "
            "(compressed-tensors kv_cache_scheme)"
        )
    strategy = scheme.get("strategy")
    if strategy not in ("tensor", "attn_head"):
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: Invalid strategy for "
            "compressed-tensors KV cache "
            f"({strategy!r}); expected 'tensor' or 'attn_head'"
        )
    if not scheme.get("symmetric"):
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: Only support symmetric scaling factor for "
            f"compressed-tensors KV cache. However found symmetric: {scheme.get('symmetric')}"
        )


def resolve_cache_dtype(facts: ModelFacts, option: str,
                        release: VllmRelease | None = None, *,
                        allow_deprecated: bool = False) -> CacheDtype:
    """``cache_config.cache_dtype`` after engine-config resolution and model construction."""
    kinds = frozenset(g.layer.kind for g in facts.groups if g.layer.owns_memory)
    return cache_dtype_for(facts.config, facts.hf_quant_config, kinds, option, release,
                           allow_deprecated=allow_deprecated)


def cache_dtype_for(
    config: Mapping[str, Any],
    hf_quant_config: Mapping[str, Any] | None,
    kinds: frozenset[Kind],
    option: str,
    release: VllmRelease | None = None,
    *,
    allow_deprecated: bool = False,
) -> CacheDtype:
    """``resolve_cache_dtype`` on the raw inputs: config.json, hf_quant_config.json, the
    cache kinds of the model's layers, and ``--kv-cache-dtype``."""
    has_attention = bool(kinds & ATTENTION_KINDS)
    qc, origin = checkpoint_quant_config(config, hf_quant_config)
    method = normalized_quant_method(qc, origin, release) if qc is not None else ""
    if method and method not in VLLM_QUANTIZATION_METHODS:
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: Unknown quantization method: {method} "
            f"({origin}; {engine_words(release)} has no such method)"
        )
    if method in VLLM_DEPRECATED_QUANTIZATION_METHODS and not allow_deprecated:
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: The quantization method {method} is "
            f"deprecated and "
            "will be removed in future versions of vLLM. To bypass, set "
            f"`--allow-deprecated-quantization` ({origin}; vLLM then loads it with a "
            "warning, and so does kvledger's plan with the same flag)"
        )
    model_qc = _model_quant_config(config, qc)
    model_method = method
    if model_qc is not None and model_qc is not qc:
        model_method = str(model_qc.get("quant_method", "")).lower().replace(
            "compressed_tensors", "compressed-tensors")
    kv_scheme = model_qc.get("kv_cache_scheme") if model_qc is not None else None
    ct_scheme = kv_scheme if model_method == "compressed-tensors" else None
    if ct_scheme is not None and not isinstance(ct_scheme, Mapping):
        raise VllmLayoutError(
            f"compressed-tensors kv_cache_scheme must be an object, got {ct_scheme!r}"
        )
    if ct_scheme is not None and has_attention:
        # Every Attention layer builds a CompressedTensorsKVCacheMethod, which validates.
        validate_compressed_tensors_kv_scheme(ct_scheme, release)

    if option != "auto":
        _check_fp8_e5m2(option, method if qc is not None else model_method, ct_scheme,
                        has_attention, Kind.MLA in kinds, release)
        return CacheDtype(option, "option", f"--kv-cache-dtype {option}")

    if qc is not None:
        asked = modelopt_kv_cache_dtype(qc, method)
        if asked is not None and asked != "auto":
            return CacheDtype(
                asked, "checkpoint",
                f"{origin} (ModelOpt, quant_method {method}) declares a {asked} KV cache; "
                "vLLM adopts it under --kv-cache-dtype auto (resolve_kv_cache_dtype_string)",
            )
    if ct_scheme is not None and has_attention:
        if Kind.MLA in kinds:
            raise VllmLayoutError(
                "compressed-tensors kv_cache_scheme on a model mixing MLA and standard "
                f"attention: {engine_words(release)} switches cache_config to fp8 from the first "
                "Attention "
                "layer it builds, so MLA layers built before it stay in the model dtype; "
                "kvledger does not model that order (pass --kv-cache-dtype explicitly)"
            )
        return CacheDtype(
            "fp8", "checkpoint",
            "compressed-tensors kv_cache_scheme: vLLM's Attention layers store fp8 under "
            "--kv-cache-dtype auto (Attention.__init__)",
        )
    return CacheDtype("auto", "model dtype", "--kv-cache-dtype auto: the model dtype")


def _check_fp8_e5m2(option: str, method: str, ct_scheme: Mapping[str, Any] | None,
                    has_attention: bool, has_mla: bool,
                    release: VllmRelease | None = None) -> None:
    """``init_attention_quant``: a layer whose quantization config hands it a KV-cache method
    (fp8 → ``Attention``; ModelOpt → ``Attention`` and ``MLAAttention``; compressed-tensors
    with a ``kv_cache_scheme`` → ``Attention``) refuses an fp8_e5m2 cache."""
    if option != "fp8_e5m2":
        return
    refuses = (
        (method == "fp8" and has_attention)
        or (method.startswith("modelopt") and (has_attention or has_mla))
        or (method == "compressed-tensors" and ct_scheme is not None and has_attention)
    )
    if refuses:
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: fp8_e5m2 kv-cache is not "
            "supported with fp8 "
            f"checkpoints (quantization method {method})"
        )
