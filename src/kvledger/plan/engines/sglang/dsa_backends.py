"""DeepSeek sparse attention's kernel pair in SGLang 0.5.23 (``--dsa-prefill-backend`` /
``--dsa-decode-backend``, spelled ``--nsa-…`` before) and what it does to the KV pool.

Read from SGLang 0.5.23's source; the values are the release profile's
(``SglangRelease.dsa_backends``, set and cited in ``releases/v0_5_23.py``):

* **The pair** (``arg_groups/overrides.py`` ``_dsa_split_backend_resolution``, for a DSA
  model of the DeepSeek family): a given value stands; an unset one is ``triton`` on ROCm;
  on CUDA with an fp8 KV ``trtllm`` (SM10x and later) or ``flashmla_kv``; with a bf16 KV
  prefill ``flashmla_sparse`` and decode ``trtllm`` / ``fa3``. GLM-5 with an fp8 KV on SM12x
  takes ``flashinfer_sparse_mla``; a config with ``learnable_sink`` must use
  ``flashmla_sparse``.
* **Its checks** (``_check_dsa_backend_constraints``): ``triton`` only on ROCm; on CUDA an fp8
  KV with ``tilelang`` needs both backends tilelang and SM89 or newer.
* **What it changes in the pool** (``mem_cache/kv_cache_configurator.py``
  ``calculate_mla_kv_cache_dim``): only the fp8 latent row. Raw (``kv_lora_rank + rope``
  bytes) when either backend is trtllm, on ROCm when either is tilelang / triton / aiter, or
  when both are tilelang; else ``kv_lora_rank + kv_lora_rank // 128 × 4 + rope × 2`` (fp32
  scales per 128 values and a bf16 rope). A bf16 KV keeps ``kv_lora_rank + rope`` elements
  whatever the pair. The page (``model_overrides/deepseek_v2.py``) and the indexer rows
  (``_compute_dsa_indexer_cell_size``) do not depend on the pair.

Not read, and refused by name: values whose platform path kvledger has not read (on ROCm
anything but tilelang / triton / aiter; aiter off ROCm; intel_xpu), and HiSparse (its own
default pair; its flags are refused by the serve-line table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.plan.engines.sglang.model import SglangLayoutError
from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.model import SglangModel
    from kvledger.plan.engines.sglang.options import SglangOptions
    from kvledger.plan.engines.sglang.releases.profile import DsaBackendRules


def capability_major(platform: str) -> int:
    """``torch.cuda.get_device_capability()[0]`` as SGLang's DSA defaults read it: the SM
    major on CUDA ("sm90" → 9, "sm100" → 10); on ROCm HIP's device major, the gfx target
    without its last two characters ("gfx942" → 9, "gfx950" → 9, "gfx1100" → 11)."""
    if platform.startswith("gfx"):
        return int(platform[3:-2])
    return int(platform[2:-1])


def _sm_minor_at_least_89(platform: str) -> bool:
    """``(major, minor) >= (8, 9)`` for a CUDA platform family name ("sm89", "sm90", ...)."""
    return int(platform[2:]) >= 89


@record(frozen=True)
class DsaPair:
    """The prefill / decode DSA kernels SGLang resolves, and whether its fp8 row is raw."""

    prefill: str
    decode: str
    source: str
    raw_fp8_row: bool

    def describe(self) -> str:
        return f"prefill {self.prefill}, decode {self.decode} ({self.source})"


def has_learnable_sink(model: SglangModel) -> bool:
    """``getattr(hf_config, "learnable_sink", False)``."""
    return bool(model.config.get("learnable_sink"))


def _defaults(model: SglangModel, kv_dtype: str, platform: str, rocm: bool,
              rules: DsaBackendRules) -> tuple[str, str, str]:
    major = capability_major(platform)
    if has_learnable_sink(model):
        return rules.sink_backend, rules.sink_backend, "learnable attention sinks"
    if model.architecture == rules.glm_sm12_arch and major == 12 and kv_dtype == "fp8_e4m3" \
            and not rocm:
        both = rules.glm_sm12_fp8_default
        return both, both, "GLM fp8 KV on SM12x"
    if rocm:
        return rules.rocm_default, rules.rocm_default, "ROCm default"
    if kv_dtype == "fp8_e4m3":
        both = rules.fp8_default_blackwell if major >= 10 else rules.fp8_default_hopper
        return both, both, f"fp8 KV default on SM{major}"
    decode = rules.bf16_decode_default_blackwell if major >= 10 else \
        rules.bf16_decode_default_hopper
    return rules.bf16_prefill_default, decode, f"bf16 KV default on SM{major}"


def _check_given(role: str, value: str, choices: tuple[str, ...], rocm: bool,
                 rules: DsaBackendRules, where: str) -> None:
    option = f"--dsa-{role}-backend"
    if value not in choices:
        raise SglangLayoutError(f"{option} {value}: SGLang has no such choice (it takes "
                                f"{', '.join(choices)})")
    if not rocm and value in rules.rocm_only:
        raise SglangLayoutError(
            f"SGLang refuses to start: The {value} DSA backend is only supported on ROCm/HIP "
            f"({option} {value} on {where}; flashmla_kv on Hopper, trtllm on Blackwell)")
    read = rules.read_rocm if rocm else rules.read_cuda
    if value not in read:
        raise SglangLayoutError(
            f"{option} {value} on {where}: kvledger has read SGLang's DSA path there for "
            f"{', '.join(read)} only (which fp8 row {value} keeps and whether it runs there "
            "are not read); pass one of them, or drop the flag for SGLang's default")


def resolve_pair(model: SglangModel, kv_dtype: str, platform: str,
                 options: SglangOptions | None, rules: DsaBackendRules) -> DsaPair:
    """``_dsa_split_backend_resolution`` and ``_check_dsa_backend_constraints`` for a DSA
    model of the DeepSeek family, then ``calculate_mla_kv_cache_dim``'s row choice.
    ``kv_dtype``: the resolved storage dtype (``bfloat16`` / ``fp8_e4m3``)."""
    rocm = platform.startswith("gfx")
    where = "ROCm" if rocm else platform
    given_prefill = getattr(options, "dsa_prefill_backend", None)
    given_decode = getattr(options, "dsa_decode_backend", None)
    if given_prefill is not None:
        _check_given("prefill", given_prefill, rules.prefill_choices, rocm, rules, where)
    if given_decode is not None:
        _check_given("decode", given_decode, rules.decode_choices, rocm, rules, where)
    if has_learnable_sink(model):
        for role, value in (("prefill", given_prefill), ("decode", given_decode)):
            if value is not None and value != rules.sink_backend:
                raise SglangLayoutError(
                    f"SGLang refuses to start: {model.architecture} uses learnable attention "
                    f"sinks and requires --dsa-{role}-backend {rules.sink_backend!r}; got "
                    f"{value!r}")
    prefill, decode, why = _defaults(model, kv_dtype, platform, rocm, rules)
    if given_prefill is not None or given_decode is not None:
        why = "given" if given_prefill is not None and given_decode is not None else \
            f"given, the other the {why}"
    prefill = given_prefill if given_prefill is not None else prefill
    decode = given_decode if given_decode is not None else decode
    if not rocm and kv_dtype == "fp8_e4m3" and rules.raw_both in (prefill, decode):
        if prefill != rules.raw_both or decode != rules.raw_both:
            raise SglangLayoutError(
                "SGLang refuses to start: CUDA TileLang FP8 KV requires both DSA backends to "
                f"be tilelang; raw and scaled FP8 KV layouts cannot be mixed (prefill "
                f"{prefill}, decode {decode})")
        if not _sm_minor_at_least_89(platform):
            raise SglangLayoutError("SGLang refuses to start: CUDA TileLang FP8 KV requires "
                                    f"SM89 or newer ({platform})")
    pair = (prefill, decode)
    raw = rules.raw_either in pair or (rocm and any(b in rules.raw_rocm for b in pair)) or \
        (prefill == rules.raw_both and decode == rules.raw_both)
    return DsaPair(prefill, decode, f"{why}, _dsa_split_backend_resolution", raw)
