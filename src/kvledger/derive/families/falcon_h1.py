"""Falcon-H1 (``falcon_h1``): attention and a Mamba2 mixer side by side in every layer.

Why a module of its own: the other hybrids (``ssm_hybrids.py``, ``mamba.py``) give each layer
*either* attention or a recurrent mixer; Falcon-H1's ``FalconH1ParallelHybrid`` (vLLM
``falcon_h1.py``) runs both in each of its ``num_hidden_layers`` layers, so vLLM registers
2·N cache layers: the attention of layer i as ``model.layers.i.self_attn.attn`` and its
mixer as layer ``num_hidden_layers + i`` ("In V1 all attention/ssm layers must have
different index in prefix"). kvledger places them the same way: attention at 0..N-1, the
Mamba2 states at N..2N-1.

Attention (vLLM ``FalconH1AttentionDecoderLayer.__init__``): ``num_key_value_heads`` K/V heads
of ``head_dim``, or ``hidden_size // num_attention_heads`` when the config states none; no
window. FalconH1Config fills ``num_key_value_heads`` = ``num_attention_heads`` when it is null.

Mamba2 state (vLLM ``FalconH1ForCausalLM.get_mamba_state_shape_from_config`` →
``MambaStateShapeCalculator.mamba2_state_shape``): intermediate size ``mamba_d_ssm``, or
``mamba_expand × hidden_size`` when it is null; ``mamba_n_heads`` × ``mamba_d_head``,
``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``. FalconH1Config (transformers 5.19)
defaults ``mamba_d_ssm`` to 1024 (not null) for a file that omits it, turns ``mamba_d_head``
``"auto"`` into intermediate // heads, and its ``validate_architecture`` refuses a config
whose heads × head dim differ from the intermediate size, so vLLM 0.32 cannot load one: such
a config is refused here with the class's own words.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.families.standard import attention, divided_head_dim
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived
from kvledger.derive.states import Mamba2State


def _refuse(cfg: Config, why: str) -> UnsupportedArchitecture:
    return UnsupportedArchitecture(
        f"unsupported: falcon_h1 {why}; transformers' FalconH1Config rejects this config "
        "(validate_architecture), so vLLM cannot load it",
        model_type=cfg.model_type,
    )


def _mamba2(cfg: Config) -> Mamba2State:
    # FalconH1Config.__post_init__ / validate_architecture (transformers 5.19) and vLLM
    # falcon_h1.py get_mamba_state_shape_from_config: the same intermediate size.
    inner = (cfg.int("mamba_d_ssm", minimum=1) if "mamba_d_ssm" in cfg
             else cfg.int("mamba_expand") * cfg.int("hidden_size"))
    heads = cfg.int("mamba_n_heads", minimum=1)
    if inner % heads:
        raise _refuse(cfg, f"mamba_n_heads {heads} does not divide the Mamba intermediate "
                           f"size {inner} ('mamba_n_heads must divide mamba_expand * "
                           "hidden_size')")
    stated = cfg.get("mamba_d_head")
    head_dim = inner // heads if stated == "auto" else cfg.int("mamba_d_head", minimum=1)
    if head_dim * heads != inner:
        raise _refuse(cfg, f"mamba_n_heads x mamba_d_head ({heads} x {head_dim}) != the Mamba "
                           f"intermediate size {inner} (mamba_d_ssm, else mamba_expand x "
                           "hidden_size: 'The dimensions for the Mamba head state do not "
                           "match the model intermediate_size')")
    return Mamba2State(
        index=0, intermediate_size=inner, n_groups=cfg.int("mamba_n_groups", minimum=1),
        num_heads=heads, head_dim=head_dim, state_size=cfg.int("mamba_d_state", minimum=1),
        conv_kernel=cfg.int("mamba_d_conv", minimum=1), conv_dtype=model_dtype(cfg),
    )


def derive(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads", minimum=1)
    kv_heads = cfg.int("num_key_value_heads", heads, minimum=1)
    dim = (cfg.int("head_dim", minimum=1) if "head_dim" in cfg
           else divided_head_dim(cfg, heads, hidden_key="hidden_size"))
    attn = attention(0, kv_heads, dim, kv_dtype)
    state = _mamba2(cfg)
    layers: list[LayerCache] = [attn.at(i) for i in range(n)]
    layers += [state.at(n + i) for i in range(n)]
    return Derived(layers, [
        f"{n} layers, each with attention and a Mamba2 mixer side by side (vLLM registers the "
        f"mixers as layers {n}..{2 * n - 1}); Mamba2 state {state.bytes_per_request()} B per "
        "request per layer (model dtype)"])
