"""ATOM's own sizing code, run on CPU against real configs: tests/oracles/atom/cases.jsonl.

Usage (from the repository root; SNAPSHOT is a directory holding ROCm/ATOM's ``atom/`` tree,
e.g. ``git -C <mirror> archive ffdf3bb5d atom | tar -x -C SNAPSHOT``)::

    /work/main/.venv/bin/python tests/oracles/atom/run_atom_oracle.py SNAPSHOT \
        > tests/oracles/atom/cases.jsonl

Nothing of ATOM is copied here: the script parses ATOM's files at SNAPSHOT and executes, in
place, the functions that size the KV cache —

- ``sub_pool_spec.py`` whole (pure Python): ``plan_pools``, ``page_pool``, ``state_pool``;
- each backend's ``sub_pool_specs`` and the helpers it calls (``GDNStateMixin.state_spec`` /
  ``_state_shape`` / ``_state_dtypes`` / ``_state_shape_for_runner`` / ``_init_gdn_state``,
  ``_KimiMLAGDNCommon._num_cache_rows``, the V4 builder's ``_state_fields`` /
  ``_plane_row_widths`` / ``_indexer_block_bytes`` / row-width methods, ``aiter_attention.
  _resolve_index_cache_dtype``), lifted out of their classes by ``ast`` so that the GPU-only
  imports at the top of those files (aiter, triton) are never run;
- ``ModelRunner._get_num_kv_heads``, ``_get_total_num_layers``, ``_num_draft_kv_layers``,
  ``is_mimo_v2`` and ``models/utils.get_pp_indices``;
- ``v4_pool_geometry.UnifiedPoolGeometry`` and ``state_arena.plan_field_planes`` (pure).

What the script supplies is what those functions read off objects built on the GPU, stated
where it is set (each an attribute ATOM's ``__init__`` assigns; the line is cited): the
runner's block sizes, the builder's ``num_spec``, the V4 builder's geometry attributes, and an
``aiter.dtypes`` stand-in (``d_dtypes`` bf16 / fp8 → torch dtypes; only ``itemsize`` is read).
The config becomes ``hf_config`` as ATOM's ``get_hf_config`` leaves it: the text config of a
multimodal wrapper with the wrapper's ``architectures``; ``head_dim`` filled as
``get_num_blocks`` fills it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CATALOG = ROOT.parent / "shared" / "configs"  # the catalog rows' real files
SHARED = ROOT.parent / "shared" / "configs"
GIB = 1 << 30


def _module(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _lift(path: Path, cls: str | None, name: str, env: dict[str, Any]) -> Any:
    """The function ``cls.name`` (or top-level ``name``) of ``path``, compiled on its own in
    ``env`` (decorators dropped)."""
    tree = ast.parse(path.read_text())
    body = tree.body
    if cls is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
    node.decorator_list = []
    module = ast.Module(body=[node], type_ignores=[])
    ast.fix_missing_locations(module)
    exec(compile(module, f"{path}:{cls}.{name}", "exec"), env)
    return env[name]


class Atom:
    """The pieces of the snapshot the cases run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        att = root / "atom" / "model_ops" / "attentions"
        aiter = types.ModuleType("aiter")
        aiter.dtypes = types.SimpleNamespace(  # type: ignore[attr-defined]
            d_dtypes={"bf16": torch.bfloat16, "fp8": torch.float8_e4m3fnuz},
            fp8=torch.float8_e4m3fnuz, fp32=torch.float32)
        sys.modules["aiter"] = aiter
        self.sps = _module(att / "sub_pool_spec.py", "atom_sub_pool_spec")
        self.geometry = _module(att / "v4_pool_geometry.py", "atom_v4_pool_geometry")
        self.arena = _module(att / "state_arena.py", "atom_state_arena")
        kv_block = ast.parse((root / "atom/model_engine/kv_block.py").read_text())
        slot = next(n for n in kv_block.body if isinstance(n, ast.Assign)
                    and getattr(n.targets[0], "id", "") == "STATE_SLOT_CLASS")
        self.state_slot = ast.literal_eval(slot.value)
        self.env: dict[str, Any] = {
            "torch": torch, "math": math, "dtypes": aiter.dtypes,  # type: ignore[attr-defined]
            "page_pool": self.sps.page_pool, "state_pool": self.sps.state_pool,
            "SubPoolSpec": self.sps.SubPoolSpec, "STATE_SLOT_CLASS": self.state_slot,
            "CpuGpuBuffer": lambda *a, **k: None, "StateField": self.arena.StateField,
        }
        self.files = {"mha": att / "aiter_attention.py", "mla": att / "aiter_mla.py",
                      "gdn": att / "gdn_attn.py", "kimi": att / "kimi_mla_gdn_attn.py",
                      "v4": att / "deepseek_v4_attn.py",
                      "runner": root / "atom/model_engine/model_runner.py",
                      "utils": root / "atom/models/utils.py"}
        self.env["_resolve_index_cache_dtype"] = self.lift("mha", None,
                                                            "_resolve_index_cache_dtype")
        self.env["get_pp_indices"] = self.lift("utils", None, "get_pp_indices")
        v4src = self.files["v4"].read_text()
        self.env["STATE_WINDOW_FIELD"] = "state_window" if "STATE_WINDOW_FIELD = " in v4src \
            else None

    def lift(self, file: str, cls: str | None, name: str) -> Any:
        return _lift(self.files[file], cls, name, self.env)


def hf_config(path: Path) -> dict[str, Any]:
    raw = json.loads(path.read_text())
    text = raw.get("text_config")
    cfg = dict(text) if isinstance(text, dict) else dict(raw)
    if raw.get("architectures"):
        cfg["architectures"] = raw["architectures"]
    if cfg.get("head_dim") is None and cfg.get("hidden_size") and cfg.get("num_attention_heads"):
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]  # get_num_blocks
    return cfg


def runner(atom: Atom, cfg: dict[str, Any], *, kv: str, tp: int, block: int, physical: int,
           num_spec: int, dtype: torch.dtype) -> Any:
    hf = types.SimpleNamespace(**cfg)
    spec = None
    if num_spec:
        draft = types.SimpleNamespace(**{**cfg, "num_nextn_predict_layers": 1})
        spec = types.SimpleNamespace(draft_model_hf_config=draft, num_speculative_tokens=num_spec,
                                     use_dspark_with_draft=lambda: False)
    env = atom.env
    env["get_pp_group"] = lambda: types.SimpleNamespace(world_size=1, rank_in_group=0)
    cls = type("Runner", (), {
        "_get_num_kv_heads": atom.lift("runner", "ModelRunner", "_get_num_kv_heads"),
        "_get_total_num_layers": atom.lift("runner", "ModelRunner", "_get_total_num_layers"),
        "_num_draft_kv_layers": atom.lift("runner", "ModelRunner", "_num_draft_kv_layers"),
        "is_mimo_v2": atom.lift("runner", "ModelRunner", "is_mimo_v2"),
    })
    r = cls()
    r.config = types.SimpleNamespace(hf_config=hf, kv_cache_dtype=kv, speculative_config=spec,
                                     index_cache_dtype=None, torch_dtype=dtype)
    r.hf_text_config = hf
    r.world_size = tp
    r.block_size = block  # ModelRunner.__init__: config.kv_cache_block_size
    r.physical_block_size = physical  # ModelRunner.__init__: attn_metadata_builder.block_size
    r.is_deepseek_v32 = hasattr(hf, "index_topk")  # ModelRunner.__init__ (MLA models)
    r.num_spec_tokens = num_spec
    r.forward_vars = {}
    if num_spec:
        r.drafter = types.SimpleNamespace(mtp_k=num_spec)
    return r


def builder(atom: Atom, kind: str, r: Any, tp: int) -> Any:
    env = atom.env
    env["get_tp_group"] = lambda: types.SimpleNamespace(world_size=tp)
    methods: dict[str, Any] = {}
    if kind == "mha":
        methods["sub_pool_specs"] = atom.lift("mha", "AiterAttentionMetadataBuilder",
                                              "sub_pool_specs")
    elif kind == "mla":
        methods["sub_pool_specs"] = atom.lift("mla", "AiterMLAMetadataBuilder", "sub_pool_specs")
    elif kind in ("gdn", "kimi"):
        for name in ("state_spec", "_state_dtypes", "_state_shape_for_runner", "_init_gdn_state"):
            methods[name] = atom.lift("gdn", "GDNStateMixin", name)
        methods["_state_shape"] = staticmethod(atom.lift("gdn", "GDNStateMixin", "_state_shape"))
        if kind == "gdn":
            methods["sub_pool_specs"] = atom.lift("gdn", "GDNAttentionMetadataBuilder",
                                                  "sub_pool_specs")
        else:
            for name in ("sub_pool_specs", "_num_cache_rows"):
                methods[name] = atom.lift("kimi", "_KimiMLAGDNCommon", name)
    b = type("Builder", (), methods)()
    b.model_runner = r
    if kind in ("gdn", "kimi"):
        b.max_bs, b.device = 4, "cpu"  # only the index buffers _init_gdn_state builds read them
        b._init_gdn_state(r)
    return b


def v4_builder(atom: Atom, cfg: dict[str, Any], *, kv: str, platform: str, num_spec: int) -> Any:
    names = ("_state_fields", "_plane_row_widths", "nope_row_bytes", "rope_row_bytes",
             "plane_row_bytes", "_indexer_block_bytes", "_geometry_ratios", "_slot_align_rows",
             "sub_pool_specs")
    b = type("V4Builder", (), {n: atom.lift("v4", "DeepseekV4AttentionMetadataBuilder", n)
                               for n in names})()
    # DeepseekV4AttentionMetadataBuilder.__init__, attribute by attribute:
    ratios = list(cfg["compress_ratios"])
    b.compress_ratios, b.block_size = ratios, 256
    b.csa_layers = [i for i, r in enumerate(ratios) if r == 4]
    b.hca_layers = [i for i, r in enumerate(ratios) if r == 128]
    b.head_dim = cfg.get("kv_head_dim", 512)
    b.index_head_dim = cfg.get("index_head_dim", 128)
    b.window_size = cfg.get("sliding_window", 128)
    b.rope_head_dim = cfg.get("qk_rope_head_dim", 64)
    b.csa_rows_per_block = b.block_size // 4
    b._state_dtype = torch.float32
    b._kv_fp8 = kv == "fp8" and platform in ("gfx950", "gfx1250")
    fp8 = torch.float8_e4m3fnuz
    b._swa_dtype = b._classical_dtype = fp8 if b._kv_fp8 else torch.bfloat16
    b._rope_dtype = torch.bfloat16
    b._index_row_bytes = b.index_head_dim + 4
    # Config: index_cache_dtype "fp8" on gfx942 else "fp4"; fp4_indexer_enabled: fp4 and not
    # gfx942.
    b._indexer_fp4 = platform != "gfx942"
    b._idx_k_tiles = b.index_head_dim // 128
    b.max_spec_steps = num_spec
    ring_extra = b.max_spec_steps
    b.csa_main_state_shape = (2 * 4 + ring_extra, 2 * b.head_dim)
    b.csa_idx_state_shape = (2 * 4 + ring_extra, 2 * b.index_head_dim)
    b.hca_main_state_shape = (128 + ring_extra, b.head_dim)
    b.win_with_spec = b.window_size + b.max_spec_steps
    b._field_window_layers, b._field_window_dtype = (), None
    _, arena_rows = atom.arena.plan_field_planes(b._state_fields(), b._plane_row_widths())
    b.pool_geometry = atom.geometry.UnifiedPoolGeometry(
        b._geometry_ratios(), num_blocks=0, num_slots=0, ring_slots=b.win_with_spec,
        block_size=b.block_size, arena_rows=arena_rows, slot_align_rows=b._slot_align_rows())
    return b


def _physical(cfg: dict[str, Any], block: int, kind: str) -> int:
    if kind in ("mla", "kimi"):
        return 1  # AiterMLAMetadataBuilder.__init__: block_size = 1 (ATOM_MLA_PAGE_SIZE unset)
    sparse = cfg.get("sparse_attention_config") or {}
    if sparse.get("sparse_block_size"):
        return int(sparse["sparse_block_size"])  # AiterAttentionMetadataBuilder.__init__
    return block if block in (256, 1024) else 16


# (case, config, backend kind, kv dtype, tp, max_num_seqs, budget, num_spec, platform, edits[,
# block size: --block-size, default 16; DeepSeek-V4 256])
CASES: list[tuple[Any, ...]] = [
    ("llama-bf16", "catalog:meta-llama--Meta-Llama-3.1-8B", "mha", "bf16", 1, 512, 64 * GIB, 0,
     None, {}),
    ("llama-fp8-tp4", "catalog:meta-llama--Meta-Llama-3.1-8B", "mha", "fp8", 4, 512, 20 * GIB,
     0, None, {}),
    ("gpt-oss-20b", "catalog:openai--gpt-oss-20b", "mha", "bf16", 1, 512, 40 * GIB, 0, None, {}),
    ("mixtral-tp2", "catalog:mistralai--Mixtral-8x7B-v0.1", "mha", "bf16", 2, 512, 30 * GIB, 0,
     None, {}),
    ("qwen3-8b", "catalog:Qwen--Qwen3-8B", "mha", "bf16", 1, 256, 16 * GIB, 0, None, {}),
    ("minimax-m2.5-tp8", "catalog:MiniMaxAI--MiniMax-M2.5", "mha", "fp8", 8, 512, 50 * GIB, 0,
     None, {}),
    # The sparse builder asserts --block-size divisible by sparse_block_size (128).
    ("minimax-m3-sparse", "catalog:MiniMaxAI--MiniMax-M3", "mha", "bf16", 4, 512, 60 * GIB, 0,
     None, {"architectures": ["MiniMaxM3SparseForCausalLM"]}, 128),
    ("mimo-v2-flash-tp4", "shared:XiaomiMiMo--MiMo-V2-Flash", "mha", "bf16", 4, 512, 60 * GIB,
     0, None, {}),
    ("deepseek-v3", "catalog:deepseek-ai--DeepSeek-V3", "mla", "bf16", 8, 512, 64 * GIB, 0,
     None, {}),
    ("deepseek-v3-mtp1", "catalog:deepseek-ai--DeepSeek-V3", "mla", "fp8", 8, 512, 64 * GIB, 1,
     None, {}),
    ("deepseek-v3.2", "catalog:deepseek-ai--DeepSeek-V3.2", "mla", "bf16", 8, 512, 64 * GIB, 0,
     None, {}),
    ("glm-5.2", "catalog:zai-org--GLM-5.2", "mla", "fp8", 8, 512, 64 * GIB, 0, None, {}),
    ("kimi-k2", "catalog:moonshotai--Kimi-K2-Instruct", "mla", "bf16", 8, 512, 64 * GIB, 0,
     None, {}),
    ("qwen3-next", "catalog:Qwen--Qwen3-Next-80B-A3B-Thinking", "gdn", "bf16", 1, 512,
     64 * GIB, 0, None, {}),
    ("qwen3-next-tp4-mtp2", "catalog:Qwen--Qwen3-Next-80B-A3B-Thinking", "gdn", "bf16", 4, 256,
     40 * GIB, 2, None, {}),
    ("qwen3.5-397b-tp8", "catalog:Qwen--Qwen3.5-397B-A17B", "gdn", "fp8", 8, 512, 100 * GIB, 0,
     None, {}),
    ("qwen3-next-too-small", "catalog:Qwen--Qwen3-Next-80B-A3B-Thinking", "gdn", "bf16", 1, 512,
     GIB // 4, 0, None, {}),
    ("kimi-k3-tp8", "catalog:moonshotai--Kimi-K3", "kimi", "bf16", 8, 128, 64 * GIB, 0, None,
     {}),
    ("deepseek-v4-flash", "catalog:deepseek-ai--DeepSeek-V4-Flash", "v4", "bf16", 1, 512,
     64 * GIB, 0, "gfx950", {}),
    ("deepseek-v4-pro-fp8", "catalog:deepseek-ai--DeepSeek-V4-Pro", "v4", "fp8", 8, 512,
     96 * GIB, 0, "gfx950", {}),
    ("deepseek-v4-flash-gfx942-mtp1", "catalog:deepseek-ai--DeepSeek-V4-Flash", "v4", "bf16",
     1, 256, 64 * GIB, 1, "gfx942", {}),
]


def _path(ref: str) -> Path:
    where, stem = ref.split(":", 1)
    return (CATALOG if where == "catalog" else SHARED) / f"{stem}.json"


def run(atom: Atom, case: tuple[Any, ...]) -> dict[str, Any]:
    name, ref, kind, kv, tp, seqs, budget, num_spec, platform, edits = case[:10]
    cfg = {**hf_config(_path(ref)), **edits}
    dtype = torch.bfloat16  # every config here states bfloat16 (Config.torch_dtype)
    block = 256 if kind == "v4" else (case[10] if len(case) > 10 else 16)
    if kind == "v4":
        specs = v4_builder(atom, cfg, kv=kv, platform=platform, num_spec=num_spec)\
            .sub_pool_specs()
    else:
        r = runner(atom, cfg, kv=kv, tp=tp, block=block, physical=_physical(cfg, block, kind),
                   num_spec=num_spec, dtype=dtype)
        specs = builder(atom, kind, r, tp).sub_pool_specs()
    out: dict[str, Any] = {
        "case": name, "config": ref, "edits": edits, "backend": kind, "kv_cache_dtype": kv,
        "block_size": block,
        "tensor_parallel_size": tp, "max_num_seqs": seqs, "available_bytes": budget,
        "num_speculative_tokens": num_spec, "platform": platform,
        "specs": [{"pool": s.pool.value, "name": s.name, "entry_bytes": s.entry_bytes,
                   "entries_per_req": s.entries_per_req, "extra_entries": s.extra_entries}
                  for s in specs],
    }
    try:
        plan = atom.sps.plan_pools(specs, budget, seqs)
    except atom.sps.InsufficientPoolBudget as exc:
        out["insufficient"] = {"reserved_bytes": exc.reserved_bytes,
                               "available_bytes": exc.available_bytes, "entries": exc.entries}
        return out
    out["entries"] = dict(plan.entries)
    out["reserved_bytes"] = dict(plan.reserved_bytes)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    atom = Atom(Path(argv[0]))
    for case in CASES:
        if case[1].startswith("shared:") and not _path(case[1]).exists():
            print(f"skipped {case[0]}: {_path(case[1])} absent", file=sys.stderr)
            continue
        print(json.dumps(run(atom, case), sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
