"""Derived facts, reused across requests: derive a model once, plan it many times.

``plan_model(model, request)`` derives ``model`` on every call, and a caller that plans one
model for many requests (a sweep, ``fit``, an autoscaler) would derive it again each time —
and lose the layer groups and layout views the facts memoise (``ModelFacts.cached``). This
module keeps the facts of the last few models derived.

The key is everything derivation reads: the config, the ``hf_quant_config`` and the
sentence-transformers config (as JSON text, so an edited value is another key), the source's
label and notes (both end up in the facts), the KV dtype option, and which derivation it is
(a layout may derive differently: native serves a float32 checkpoint in bfloat16). A changed
file, a different dtype option or an edited dict therefore never meets stale facts. Only
configs that are plain JSON are cached: the facts keep a copy made from the key's text
(``json.loads``), which the caller's dict cannot change afterwards.
A config that does not survive the round trip unchanged (a tuple, a non-string key, an object
``to_dict`` left in it) is derived every time, as before.

Why a small LRU and not an unbounded dict: a long-lived process (a server sizing many models)
must not grow without bound; 16 models cover any sweep.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from kvledger.derive.layers import ModelFacts
    from kvledger.source.model_source import ModelSource

MAX_MODELS = 16

_FACTS: dict[tuple[Any, ...], ModelFacts] = {}


def _owned_copy(value: Any) -> tuple[str, Any] | None:
    """(JSON text, a fresh copy equal to ``value``), or None when JSON would change it."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return None
    copy = json.loads(text)
    return (text, copy) if copy == value else None


def facts_for(
    source: ModelSource, kv_cache_dtype: str | None,
    derive: Callable[[ModelSource], ModelFacts], variant: str = "",
) -> ModelFacts:
    """The facts of ``source`` with the KV dtype option ``kv_cache_dtype``: cached, or
    ``derive(source)`` (given a source whose config and quant config are private copies).
    ``variant`` names a derivation other than ``derive_model``'s own."""
    config = _owned_copy(source.config)
    quant = _owned_copy(source.hf_quant_config)
    # The sentence-transformers config sets vLLM's length (source/sentence.py): an edited
    # max_seq_length is another key, as an edited config is.
    stated = source.sentence_config
    sentence = ("null", None) if stated is None else _owned_copy([stated[0], stated[1]])
    if config is None or quant is None or sentence is None:
        return derive(source)
    key = (variant, source.label, source.notes, kv_cache_dtype, config[0], quant[0],
           sentence[0])
    found = _FACTS.pop(key, None)
    if found is None:
        from kvledger.records import replace

        owned = None if sentence[1] is None else (str(sentence[1][0]), dict(sentence[1][1]))
        found = derive(replace(source, config=config[1], hf_quant_config=quant[1],
                               sentence_config=owned))
        while len(_FACTS) >= MAX_MODELS:
            del _FACTS[next(iter(_FACTS))]  # the least recently used
    _FACTS[key] = found  # (re)inserted last: the most recently used
    return found


def clear() -> None:
    """Forget every cached model (the next plan of each derives it again)."""
    _FACTS.clear()
