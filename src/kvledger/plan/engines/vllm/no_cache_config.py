"""Model files whose attention layers never see ``cache_config``.

vLLM's ``Attention.__init__`` (model_executor/layers/attention/attention.py) takes the KV
cache dtype from the ``cache_config`` a model file hands it, and stores ``"auto"`` — the
model dtype — when it gets none. It still reads the quantization config, so a
compressed-tensors ``kv_cache_scheme`` turns that ``"auto"`` into ``"fp8"``. A model file
that builds its ``Attention`` without ``cache_config`` (the model-type row's
``vllm_no_cache_config`` says which and why: falcon.py) therefore ignores
``--kv-cache-dtype`` and a ModelOpt checkpoint's KV dtype alike, while
``cache_config.cache_dtype`` — what vLLM logs — still carries the option. Measured: Falcon-40B
with ``--kv-cache-dtype fp8`` keeps bfloat16 pages
(tests/oracles/vllm-0.32/vllm-0.32-coverage-dense.jsonl).
"""

from __future__ import annotations

from kvledger import records
from kvledger.derive.layers import ModelFacts
from kvledger.plan.engines.vllm.cache_dtype import resolve_cache_dtype
from kvledger.plan.engines.vllm.resolve import Resolved, VllmLayoutError, kv_dtype_name
from kvledger.plan.engines.vllm.specs import QUANT_FP8_PER_TENSOR, QUANT_NONE

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.vllm.releases import VllmRelease


def layer_kv_dtype(facts: ModelFacts, res: Resolved,
                   release: VllmRelease) -> tuple[Resolved, list[str]]:
    """``res`` with the attention layers' storage dtype such a model file really gets, and a
    note when it differs from the resolved cache dtype; ``res`` itself for every other
    model."""
    why = release.no_cache_config.get(facts.model_type, "")
    if not why:
        return res, []
    # What the checkpoint alone makes of "auto": a compressed-tensors kv_cache_scheme reaches
    # the layer through its quantization config; a ModelOpt KV dtype reaches only
    # cache_config, which these layers never see.
    own = resolve_cache_dtype(facts, "auto", release)
    if own.source == "checkpoint" and own.cache_dtype != "fp8":
        raise VllmLayoutError(
            f"{facts.model}: {why}; kvledger has not checked how {release.short} then treats the "
            f"checkpoint's own KV dtype ({own.reason})"
        )
    if own.cache_dtype == "fp8":
        storage, quant = "uint8", QUANT_FP8_PER_TENSOR
    else:
        storage, quant = res.model_dtype, QUANT_NONE
    if (storage, quant) == (res.kv_storage_dtype, res.kv_quant):
        return res, []
    name = kv_dtype_name(own.cache_dtype, res.model_dtype)
    note = (f"KV cache stays {name}, not {res.kv_cache_dtype}: {why}")
    return records.replace(res, kv_storage_dtype=storage, kv_quant=quant,
                           kv_cache_dtype=name, cache_dtype_reason=note), [note]
