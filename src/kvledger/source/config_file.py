"""``read_json``: a model's JSON file (config.json and its companions), read with bounds and
refused in one ``ConfigError`` line when it is not a sane JSON object."""

from __future__ import annotations

import json

from kvledger.errors import ConfigError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


# A config.json is a few kB; the largest real ones (compressed-tensors ignore lists of every
# layer's modules) are a few hundred kB. 16 MiB is far above that and keeps a stray file
# (a safetensors shard named config.json, a log) from being read whole into memory.
MAX_CONFIG_BYTES = 16 << 20
# Real configs nest 3-5 levels (text_config.rope_parameters.full_attention, ...); deeper is a
# broken or hostile file whose walk could exhaust the stack somewhere after parsing.
MAX_CONFIG_DEPTH = 64


def read_json(path: Path | str) -> dict[str, Any]:
    """A JSON object from ``path``, or one ``ConfigError`` line saying what is wrong with it.

    UTF-8 (what the JSON spec and transformers' ``open(..., encoding="utf-8")`` read), at most
    ``MAX_CONFIG_BYTES``, an object at the top, nested at most ``MAX_CONFIG_DEPTH`` levels, and
    no key stated twice with two different values (Python's json, like transformers, would
    silently keep the last; which one the author meant is not ours to guess).
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB, which no model "
                            "config is; is it the right file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                            f"{exc.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_conflicting_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ConfigError(f"{path}: malformed JSON (nested too deeply)") from None
    except _DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    depth = _depth(data)
    if depth > MAX_CONFIG_DEPTH:
        raise ConfigError(f"{path}: nested {depth} levels deep; a model config nests a few "
                            f"(kvledger reads at most {MAX_CONFIG_DEPTH})")
    return data


class _DuplicateKey(ValueError):
    pass


def _no_conflicting_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            first, last = (json.dumps(v)[:40] for v in (out[key], value))
            raise _DuplicateKey(f"states {key!r} twice with different values ({first}, then "
                                f"{last}); remove one")
        out[key] = value
    return out


def _depth(data: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (a deep file must not crash here)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_CONFIG_DEPTH:
            return level
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return deepest
