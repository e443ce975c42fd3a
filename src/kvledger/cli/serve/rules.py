"""How a server flag can affect the KV plan: the four classes, and the rule type the engine
tables (``vllm_flags.py``, ``sglang_flags.py``) are written in.

- ``MAPPED``   becomes a kvledger ``plan`` option (``--tensor-parallel-size``, …).
- ``INERT``    cannot change memory (ports, API keys, logging, parsers, …): ignored, listed.
- ``ESTIMATE`` changes only a reserve kvledger already *estimates* (the activation peak, CUDA
               graphs, communication buffers): ignored with a note — the budget's
               ``estimated`` lines stay estimates; with ``--kv-cache-memory-bytes`` the engine
               skips profiling and these cannot matter at all.
- ``WEIGHTS``  changes the weights on each GPU (CPU offload, LoRA slots, expert placement):
               kvledger's weights line would be wrong, so it is refused by name — unless the
               line gives the KV budget directly (``--kv-cache-memory-bytes``), where the
               engine does not subtract weights and the flag cannot change the plan.
- ``RESERVE``  (SGLang) changes the reserve the engine's *default* memory fraction leaves
               (CUDA graphs, communication): refused unless the fraction or the KV budget is
               given, which bypasses the default.
- ``KV``       changes the KV layout or its budget in a way kvledger does not model (another
               config, a KV connector, layer-skipped KV quantization, …): always refused by
               name when set to anything but the engine's default.

A rule may list values that change nothing (``same``: e.g. ``--revision main``) besides the
flag's own default from the engine's table.
"""

from __future__ import annotations

from typing import Any

from kvledger.records import record

MAPPED = "mapped"
INERT = "inert"
ESTIMATE = "estimate"
WEIGHTS = "weights"
RESERVE = "reserve"
KV = "kv"
CLASSES = (MAPPED, INERT, ESTIMATE, WEIGHTS, RESERVE, KV)


@record(frozen=True)
class Rule:
    cls: str
    why: str = ""
    same: tuple[Any, ...] = ()  # values that change nothing, besides the table's default


def table(cls: str, names: str, why: str = "", same: tuple[Any, ...] = ()) -> dict[str, Rule]:
    """``names`` (whitespace-separated dests) all get the same rule."""
    rule = Rule(cls, why, same)
    return {name: rule for name in names.split()}


def merge(*parts: dict[str, Rule]) -> dict[str, Rule]:
    """One table from the class groups; a flag in two groups is a table error, not a choice."""
    merged: dict[str, Rule] = {}
    for part in parts:
        for name, rule in part.items():
            if name in merged:
                raise ValueError(f"{name} is classified twice ({merged[name].cls}, {rule.cls})")
            merged[name] = rule
    return merged


def changes(rule: Rule, value: Any, default: Any) -> bool:
    """Whether ``value`` differs from what the engine does without the flag."""
    if value == default or value in rule.same:
        return False
    # An empty list / dict given explicitly is the same as an empty default.
    return not (value in ([], {}, None) and default in ([], {}, None))
