"""The dense MLA attention backend a CUDA worker picks, and the block size that follows.

vLLM chooses an attention backend per layer kind from a priority list that depends on the
GPU's compute capability (``platforms/cuda.py _get_backend_priorities``, ``use_mla`` branch;
the same in vLLM 0.32 and 0.33) and keeps the first one whose checks pass
(``CudaPlatformBase.get_valid_backends`` → ``AttentionBackend.validate_configuration``:
compute capability, KV cache dtype, the block size when the user gave one, and the backend's
own ``supports_combination``). With ``--block-size auto`` the block size is then the chosen
backend's ``get_preferred_block_size(16)``: 16 if it takes 16, else its smallest kernel size
(``v1/attention/backend.py``; ``Platform._preferred_block_size_for_backends``).

The backends below, each as its file under ``v1/attention/backends/mla/`` declares it:

- ``FLASH_ATTN_MLA`` (flashattn_mla.py): SM90 only; auto/float16/bfloat16 caches;
  MultipleOf(16).
- ``FLASHMLA`` (flashmla.py): capability 9 or 10, but its dense kernel runs on Hopper only
  (``ops/flashmla.is_flashmla_dense_supported``: family 90); fp8 caches too; exactly [64].
- ``FLASHINFER_MLA`` (flashinfer_mla.py): SM10x; fp8 caches too; [32, 64];
  ``qk_nope_head_dim`` in {64, 128, 192} (read from the text config, 1 when absent).
- ``TOKENSPEED_MLA`` (tokenspeed_mla.py): SM10x; fp8/fp8_e4m3 caches only; [32, 64];
  DeepSeek-R1 dimensions (qk_nope 128, qk_rope 64, v 128).
- ``CUTLASS_MLA`` (cutlass_mla.py): SM10x; fp8 caches too; exactly [128].
- ``TRITON_MLA`` (triton_mla.py): any capability; fp8 caches too; MultipleOf(16).

The vLLM CPU oracle runs the selection at an emulated capability (``--gpu-capability``) but
skips the backends whose kernels its wheel lacks: on SM90 it cannot load FlashMLA, so the
fp8 row below (64) is read from source only; on SM100 it chose ``FLASHINFER_MLA`` (block 32)
for DeepSeek-V2-Lite, as this table does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kvledger.records import record

_FLOAT = frozenset({"auto", "float16", "bfloat16"})
_FP8 = frozenset({"fp8", "fp8_e4m3"})
# A kernel size: an int is exactly that size, ("multiple", n) any multiple of n.
Size = int | tuple[str, int]


def _qk_nope_ok(text: Mapping[str, Any]) -> bool:
    return text.get("qk_nope_head_dim", 1) in (64, 128, 192)


def _r1_dims(text: Mapping[str, Any]) -> bool:
    return (text.get("qk_nope_head_dim", 0), text.get("qk_rope_head_dim", 0),
            text.get("v_head_dim", 0)) == (128, 64, 128)


def _any(_text: Mapping[str, Any]) -> bool:
    return True


@record(frozen=True)
class MlaBackend:
    name: str
    majors: frozenset[int] | None  # None: every capability
    cache_dtypes: frozenset[str]
    sizes: tuple[Size, ...]
    fits_model: Callable[[Mapping[str, Any]], bool] = _any

    def smallest(self) -> int:
        return min(s[1] if isinstance(s, tuple) else s for s in self.sizes)

    def takes_block(self, block: int) -> bool:
        """``AttentionBackend.supports_block_size``."""
        return any(block % s[1] == 0 if isinstance(s, tuple) else block == s
                   for s in self.sizes)

    def preferred_block(self, default: int = 16) -> int:
        """``AttentionBackend.get_preferred_block_size(default)``."""
        return default if self.takes_block(default) else self.smallest()


FLASH_ATTN_MLA = MlaBackend("FLASH_ATTN_MLA", frozenset({9}), _FLOAT, (("multiple", 16),))
FLASHMLA = MlaBackend("FLASHMLA", frozenset({9}), _FLOAT | _FP8, (64,))
FLASHINFER_MLA = MlaBackend("FLASHINFER_MLA", frozenset({10}), _FLOAT | _FP8, (32, 64),
                            _qk_nope_ok)
TOKENSPEED_MLA = MlaBackend("TOKENSPEED_MLA", frozenset({10}), _FP8, (32, 64), _r1_dims)
CUTLASS_MLA = MlaBackend("CUTLASS_MLA", frozenset({10}), _FLOAT | _FP8, (128,))
TRITON_MLA = MlaBackend("TRITON_MLA", None, _FLOAT | _FP8, (("multiple", 16),))

# ``_get_backend_priorities`` (use_mla, dense part) by compute capability major.
PRIORITY: Mapping[int, tuple[MlaBackend, ...]] = {
    10: (FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA, FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA),
    12: (TRITON_MLA,),
}
OTHER_PRIORITY = (FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TRITON_MLA)


BY_NAME: Mapping[str, MlaBackend] = {b.name: b for b in (
    FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA, TRITON_MLA)}


def reasons(backend: MlaBackend, capability: tuple[int, int], cache_dtype: str,
            text: Mapping[str, Any], block_size: int | None) -> list[str]:
    """Why ``backend`` does not take this configuration, in the words and order of
    ``AttentionBackend.validate_configuration`` (v1/attention/backend.py); [] when it does.
    A backend the user selects (``--attention-backend``) is checked alone, and vLLM stops
    with these reasons (platforms/cuda.py ``get_attn_backend_cls``)."""
    out = []
    if cache_dtype not in backend.cache_dtypes:
        out.append("kv_cache_dtype not supported")
    if block_size is not None and not backend.takes_block(block_size):
        out.append("block_size not supported")
    if backend.majors is not None and capability[0] not in backend.majors:
        out.append("compute capability not supported")
    if not backend.fits_model(text):
        out.append("the model's MLA head dimensions not supported (supports_combination)")
    return out


def choose(capability: tuple[int, int], cache_dtype: str, text: Mapping[str, Any],
           block_size: int | None, forced: str | None = None) -> MlaBackend | None:
    """The first dense MLA backend of the capability's priority list that takes this cache
    dtype, model and (when the user set one) block size; None when none does (vLLM then
    stops: "No valid attention backend found"). ``forced``: the backend the user selected,
    the only one tried (None when it does not take the configuration: ``reasons``)."""
    if forced is not None:
        picked = BY_NAME.get(forced)
        if picked is None or reasons(picked, capability, cache_dtype, text, block_size):
            return None
        return picked
    for backend in PRIORITY.get(capability[0], OTHER_PRIORITY):
        if backend.majors is not None and capability[0] not in backend.majors:
            continue
        if cache_dtype not in backend.cache_dtypes or not backend.fits_model(text):
            continue
        if block_size is not None and not backend.takes_block(block_size):
            continue
        return backend
    return None
