"""The tower count's shared pieces: a tower config's checked sizes and a ViT's encoder
layers (used by ``towers.py`` and ``towers_named.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import checked_count

# A tower size beyond this is no real encoder (the largest ViTs are ~10^4 wide).
_TOWER_SIZE_MAX = 1 << 20


def _tv(cfg: Mapping[str, Any], key: str, default: Any) -> int:
    """A tower config's size ``key`` (``default`` when absent or null), checked as a count
    below ``_TOWER_SIZE_MAX``: a tower config is not guarded by derive, so it is checked here."""
    value = cfg.get(key)
    if value is None:
        value = default
    return checked_count(value, f"tower {key}", where="config", minimum=0,
                         maximum=_TOWER_SIZE_MAX)


def _vit(cfg: Mapping[str, Any], *, gated: bool, ln: bool, qkv_bias: bool = True,
         mlp_bias: bool = True, qk_norm: int = 0, norms: int = 2) -> tuple[int, int]:
    """(hidden, params) of a ViT's encoder layers: attention (4 × h², biases), MLP, norms."""
    h = _tv(cfg, "hidden_size", 0) or _tv(cfg, "embed_dim", 0)
    depth = _tv(cfg, "num_hidden_layers", 0) or _tv(cfg, "depth", 0)
    ratio = cfg.get("mlp_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or \
            not 0 < ratio <= 64:  # also refuses NaN and infinity
        raise ConfigError(f"config: a tower's mlp_ratio must be a number in (0, 64], got "
                          f"{ratio!r}")
    inter = _tv(cfg, "intermediate_size", 0) or int(h * float(ratio))
    per = 4 * h * h + (4 * h if qkv_bias else 0)
    per += (3 if gated else 2) * h * inter + ((2 if gated else 1) * inter + h if mlp_bias else 0)
    per += norms * (2 * h if ln else h) + qk_norm
    return h, depth * per
