"""Fail closed on config keys a model type has not been checked against.

A new release of a model family often adds one key that changes the cache (a window, a
layer-type list, a shared-KV flag). Falling back to the dense formula then gives a silently
wrong number, the worst defect this project can have. So every row of the model-type table
(``model_types.py``) lists the keys its handler reads and the harmless ones with why, and any
other key whose *name* looks cache-affecting is an error naming it.

The name test is deliberately broad: a false alarm costs one line in a row's harmless list
(with its reason), a miss costs a wrong plan. transformers' own bookkeeping keys (the ones
its base config class writes into every file it saves, ``bookkeeping.BOOKKEEPING``) are one
shared vocabulary known on every level of every row, never a row's exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kvledger.derive.bookkeeping import BOOKKEEPING
from kvledger.derive.config import Config
from kvledger.derive.errors import UnknownCacheKey, UnsupportedArchitecture
from kvledger.derive.model_types import CORE_KEYS, HARMLESS, Resolved
from kvledger.derive.quant import check_blocks, level_blocks

# Words in a key name that may affect the cache, matched ignoring case anywhere in the name.
CACHE_AFFECTING = (
    r"window|sliding|swa|chunk|kv|key_value|head|layer|attn|attention|cache|compress|index|"
    r"state|conv|ssm|mamba|linear|lora_rank|rope_dim|nope|nextn|mtp|draft|eagle|cross|"
    r"encoder|decoder|sink|shar|dtype|quant|n_groups|d_model|d_inner|expand|hybrid|pattern|"
    r"block_config|full_attn|lightning|kda|gdn|topk|n_embd|n_head|n_layer|n_inner|n_ctx|"
    r"max_position|source_positions|target_positions|sparse|compress|ratio"
)
_WORDS = tuple(CACHE_AFFECTING.split("|"))


def looks_cache_affecting(key: str) -> bool:
    """Whether ``key`` contains one of the ``CACHE_AFFECTING`` words, ignoring case.

    An ASCII name (every real config's) is tested word by word on its lower case; any other
    goes through the regular expression, whose case folding also matches e.g. the Kelvin sign
    to "k". Why not the expression for every key: compiling it costs ~0.6 ms of every CLI
    start-up, more than all the key tests together.
    """
    if key.isascii():
        lowered = key.lower()
        return any(word in lowered for word in _WORDS)
    return re.search(CACHE_AFFECTING, key, re.IGNORECASE) is not None

def check_keys(cfg: Config, known: Iterable[str], *, family: str) -> None:
    """Raise ``UnknownCacheKey`` for the first cache-affecting key outside ``known``.

    Keys whose value is ``None`` are ignored: an absent feature cannot change the cache.
    Nested dicts are the handler's business (it reads what it needs from them).
    """
    allowed = set(known)
    for key in sorted(cfg.raw):
        if key in allowed or cfg.raw[key] is None:
            continue
        if looks_cache_affecting(key):
            raise UnknownCacheKey(key, model_type=cfg.model_type or "?", family=family)


def known_keys(row: Resolved) -> frozenset[str]:
    """Every key ``row``'s level may carry without the guard stopping: the keys its handler
    reads, the harmless ones (global and the row's own), transformers' bookkeeping keys, the
    off keys (checked apart), derive's own, and a wrapper's text-config key."""
    return (
        row.keys | frozenset(row.harmless) | frozenset(HARMLESS) | frozenset(BOOKKEEPING)
        | row.off | CORE_KEYS
        | ({row.text_key} if row.text_key else frozenset())
    )


def check_level(
    cfg: Config, row: Resolved, *, path: str = "", also: Resolved | None = None,
    extra: Iterable[str] = (),
) -> None:
    """The one guard, run the same way on every level: the top-level config and a wrapper's
    inner text config, each with the quantization block(s) it carries.

    Off keys first (a feature the handler does not model, switched on, is refused naming the
    key and its value), then unknown cache-affecting keys, then every key of the level's
    ``quantization_config`` against its ``quant_method``'s vocabulary (weight-only keys pass,
    KV keys are resolved later, anything else fails closed naming the key). ``path`` prefixes
    the names in messages (``text_config.``); a block the level inherited from its wrapper was
    checked on the wrapper's level and is not checked again. ``also``: a second row whose keys
    share this level (a wrapper whose text config sits at its own top level, ``text_inline``);
    ``extra``: more keys known harmless here (a wrapper's ``text_harmless`` for its text config).
    """
    label = f"{row.name} ({row.family})"
    off = row.off | (also.off if also is not None else frozenset())
    for key in sorted(off):
        value = cfg.raw.get(key)
        if value:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type or row.name} config sets {key}={value!r}; "
                f"kvledger's {label} row models only configs where it is off or absent",
                model_type=cfg.model_type or row.name,
                architectures=cfg.architectures,
            )
    if row.stated:  # a remote-code type: sizes come from the file alone (remote_code.py)
        from kvledger.derive.remote_code import check_stated  # only then: start-up

        check_stated(cfg, row)
    known = (known_keys(row) | (known_keys(also) if also is not None else frozenset())
             | frozenset(extra))
    check_keys(cfg, known, family=label)
    # The level's own quantization block(s), against their quant_method's vocabulary.
    parent = cfg.parent.raw if cfg.parent is not None else {}
    own = {k: v for k, v in cfg.raw.items() if parent.get(k) is not v}
    check_blocks(level_blocks(own, cfg, path), cfg, family=label)

