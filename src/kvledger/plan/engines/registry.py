"""The engines kvledger plans for: names, what their numbers mean, and the default.

A leaf module (it imports nothing of kvledger), so the request, the CLI's ``--engine``
choices and ``kvledger models`` can list engines without importing any of them. Each row is
``name → ("module:Class", label)``; the class is imported on first use
(``kvledger.plan.engines.base.get_layout``), so ``--engine vllm`` never imports the native
layout.

Adding an engine is a folder under ``plan/engines/`` with a ``Layout`` subclass and one row
here; nothing in ``plan/request.py``, ``cli/`` or ``derive/`` changes for it.
"""

from __future__ import annotations

DEFAULT_ENGINE = "vllm"

# name → ("module:Class", label). The label is what the numbers mean (help, README, JSON);
# ``{release}`` stands for the release planned ("vLLM 0.32.0"), or the engine's name where
# no release is meant (``PRODUCTS``).
LAYOUTS: dict[str, tuple[str, str]] = {
    "vllm": ("kvledger.plan.engines.vllm.engine:VllmEngine",
             "{release}'s KV cache allocator, to the block (the default)"),
    "native": ("kvledger.plan.engines.native.engine:NativeEngine",
               "kvledger's byte-exact layout, for engine builders: no page padding, no engine "
               "runs it, so no deployment shows these numbers"),
    "sglang": ("kvledger.plan.engines.sglang.engine:SglangEngine",
               "{release}'s KV pools, to the token (max_total_num_tokens)"),
    "atom": ("kvledger.plan.engines.atom.engine:AtomEngine",
             "AMD ATOM's sub-pool plan (commit ffdf3bb5d), to the block (num_kvcache_blocks)"),
}
PRODUCTS: dict[str, str] = {"vllm": "vLLM", "native": "kvledger", "sglang": "SGLang",
                            "atom": "ATOM"}

# An engine's own max_num_seqs default, where it is not vLLM's min(256, max_num_batched_tokens)
# (ATOM: atom/config.py Config.max_num_seqs = 512). The CLI reads it when --max-num-seqs is not
# given.
DEFAULT_MAX_NUM_SEQS: dict[str, int] = {"atom": 512}
# An engine whose max_num_seqs / max_num_batched_tokens defaults follow the launch and the
# device (``module:function``, imported on first use by ``kvledger.plan.batch_defaults``):
# vLLM's EngineArgs.get_batch_defaults tiers.
BATCH_DEFAULT_RULES: dict[str, str] = {
    "vllm": "kvledger.plan.engines.vllm.batch_defaults:vllm_tier"}


def engine_names() -> tuple[str, ...]:
    return tuple(LAYOUTS)


def engine_label(name: str, release: str | None = None) -> str:
    """What ``name``'s numbers mean, naming ``release`` ("vLLM 0.32.0") where given."""
    return LAYOUTS[name][1].format(release=release or PRODUCTS.get(name, name))
