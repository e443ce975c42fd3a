"""Ask a vLLM release which architectures it serves with pipeline parallelism; write the answers.

A research tool, never imported by the package or the tests. It needs the release's oracle venv
(``../shared/oracles/tool/README.md``, ``tool-0.33/README.md``), from the repository root:

    /work/venvs/vllm032/bin/python tests/oracles/run_pp_oracle.py table
    /work/venvs/vllm032/bin/python tests/oracles/run_pp_oracle.py startup
    VLLM_TARGET_DEVICE=cpu /work/venvs/vllm033/bin/python tests/oracles/run_pp_oracle.py \
        --vllm 0.33 table        # (and startup): tests/oracles/vllm-0.33/vllm-0.33-pp-*.json*

(``table`` writes ``vllm-<release>-pp-support.json``, ``startup`` writes
``vllm-<release>-pp-startup.jsonl``, beside this script for 0.32 and under ``vllm-0.33/`` for
0.33; vLLM logs to stdout, so the answers go to files.) The rule read below is 0.32's and 0.33's
alike: ``verify_with_parallel_config``, ``is_pp_supported_model`` and ``interfaces.supports_pp``
are unchanged between the two (diff of the unzipped wheels); what differs is the registry's
rows (0.33 registers BeamForCausalLM, Kolibri1ForCausalLM, ...).

Why a script of its own: the shared oracle tool (``vllm_oracle.py``) takes ``--tp`` but no
pipeline-parallel size, so it never reaches vLLM's check. vLLM 0.32 makes it in
vllm/config/model.py ``ModelConfig.verify_with_parallel_config``::

    if pipeline_parallel_size > 1 and not self.registry.is_pp_supported_model(...):
        raise NotImplementedError("Pipeline parallelism is not supported for this model. ...")

``is_pp_supported_model`` (model_executor/models/registry.py) is ``inspect_model_cls(archs)``
→ ``_ModelInfo.supports_pp``, which is ``interfaces.supports_pp(model_cls)``: the class has
``SupportsPP`` in its MRO (or its attributes) *and* its ``forward`` takes
``intermediate_tensors``.

``table``: for every architecture a kvledger model type can carry (the architectures of the
real configs in this repository and ``../shared/configs``, and the generation classes
transformers 5.19 maps the model type to, kept where vLLM 0.32's registry has them), vLLM's
own ``_ModelInfo.supports_pp`` and the module/class it comes from — the data behind
``src/kvledger/plan/engines/vllm/pp_support.py``. For an architecture the registry lacks, whether
vLLM's
own fallback (``_try_resolve_transformers``) hands it to the Transformers backend, and every
Transformers-backend class's ``supports_pp``.

``startup``: a few real configs through ``EngineArgs(...).create_engine_config()`` with
``pipeline_parallel_size=2`` (vLLM's whole config resolution, which is where the check sits),
one line each: the error vLLM raised (type and message) or ``ok``. Replayed by
``tests/plan/engines/vllm/test_pp_support.py``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import real_configs, release_file, release_tool, take_release  # noqa: E402

ROOT = HERE.parents[1]
SHARED = ROOT / ".." / "shared"
RELEASE, _ARGS = take_release(sys.argv[1:]) if __name__ == "__main__" else ("0.32", [])
TOOL = release_tool(RELEASE)

# Mappings of transformers 5.19 (models/auto/modeling_auto.py) whose classes generate text.
GENERATION_MAPPINGS = (
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
)

# (config, engine arguments beside pipeline_parallel_size=2, why): each through vLLM's config
# resolution. Configs are read from ../shared/configs.
STARTUP_RUNS: list[tuple[str, dict[str, Any], str]] = [
    ("meta-llama--Meta-Llama-3.1-8B.json", {"max_model_len": 4096},
     "LlamaForCausalLM implements SupportsPP: accepted"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json", {"max_model_len": 4096},
     "Qwen3NextForCausalLM (hybrid GDN) implements SupportsPP: accepted"),
    ("unsloth--gemma-3n-E2B-it.json", {"max_model_len": 4096},
     "Gemma3nForConditionalGeneration (multimodal wrapper) does not: refused"),
    ("openai--whisper-tiny.json", {"max_model_len": 448},
     "WhisperForConditionalGeneration (encoder-decoder) does not: refused"),
    ("hf-internal-testing--tiny-random-PhiModel.json", {"max_model_len": 512},
     "PhiModel is not registered: the Transformers backend serves it, with SupportsPP"),
    ("openai--whisper-tiny.json", {"max_model_len": 448, "tensor_parallel_size": 4},
     "order: 6 heads at TP 4 is refused before PP is looked at"),
    ("unsloth--gemma-3n-E2B-it.json", {"max_model_len": 1048576},
     "order: max_model_len above the derived length is refused before PP is looked at"),
]


def _oracle_tool() -> Any:
    """The shared oracle tool as a module, for its torchvision stub (patch D: multimodal
    model files import torchvision, absent from the venv; the stub also makes vLLM's
    registry inspect classes in-process)."""
    spec = importlib.util.spec_from_file_location("vllm_oracle", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kvledger_types() -> tuple[list[str], dict[str, str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from kvledger.derive.model_types import ARCHITECTURES, supported_types

    return supported_types(), dict(ARCHITECTURES)


def _config_architectures() -> dict[str, set[str]]:
    """model_type → architectures, over every real config this repository can read."""
    found: dict[str, set[str]] = {}
    # (The bundled catalog's models are among ../shared/configs: its rows were read there.)
    paths = [*SHARED.glob("configs/*.json"), *ROOT.glob("tests/**/*.json")]
    for _path, data in real_configs(paths):
        if not isinstance(data.get("model_type"), str):
            continue
        for arch in data.get("architectures") or ():
            found.setdefault(data["model_type"], set()).add(arch)
    return found


def table() -> dict[str, Any]:
    tool = _oracle_tool()
    os.environ.setdefault("VLLM_CACHE_ROOT", tempfile.mkdtemp(prefix="pp-oracle-"))
    tool._maybe_install_torchvision_stub()
    from transformers.models.auto import modeling_auto
    from vllm.model_executor.models import registry as reg

    # vLLM inspects each class in a subprocess (registry._run_in_subprocess, to keep CUDA out
    # of the parent); the 0.32 tool's stub made that in-process, the 0.33 tool's only when
    # torchvision is absent (the 0.33 venv has it). In-process, as in 0.32: one import of
    # vLLM, not one a class.
    reg._run_in_subprocess = lambda fn: fn()

    generation = {**reg._TEXT_GENERATION_MODELS, **reg._MULTIMODAL_MODELS}
    derivable, by_arch = _kvledger_types()
    from_configs = _config_architectures()
    candidates: dict[str, set[str]] = {}
    for model_type in derivable:
        archs = set(from_configs.get(model_type, ()))
        for name in GENERATION_MAPPINGS:
            cls = getattr(modeling_auto, name).get(model_type)
            for arch in (cls,) if isinstance(cls, str) else (cls or ()):
                if arch in generation:
                    archs.add(arch)
        archs |= {a for a, row in by_arch.items() if row == model_type}
        for arch in archs:
            candidates.setdefault(arch, set()).add(model_type)
    backend = {a: reg.ModelRegistry._try_inspect_model_cls(a).supports_pp
               for a in reg._TRANSFORMERS_BACKEND_MODELS}
    rows: dict[str, Any] = {}
    for arch in sorted(candidates):
        entry: dict[str, Any] = {"model_types": sorted(candidates[arch])}
        registered = reg.ModelRegistry.models.get(arch)
        if registered is None:
            entry["registered"] = False
            # vLLM's own fallback when no architecture of a config is registered
            # (inspect_model_cls → _try_resolve_transformers, model_impl "auto", no auto_map):
            # the Transformers backend class, or None when it cannot serve the architecture.
            stand_in = types.SimpleNamespace(
                hf_config=types.SimpleNamespace(auto_map=None), model_impl="auto", model="",
                revision=None, code_revision=None, trust_remote_code=False,
                _get_transformers_backend_cls=lambda: "TransformersForCausalLM")
            fallback = reg.ModelRegistry._try_resolve_transformers(arch, stand_in)
            entry["transformers_backend"] = fallback is not None
        else:
            entry["module"] = getattr(registered, "module_name", "")
            entry["class"] = getattr(registered, "class_name", "")
            with contextlib.redirect_stdout(io.StringIO()):
                info = reg.ModelRegistry._try_inspect_model_cls(arch)
            entry["supports_pp"] = None if info is None else bool(info.supports_pp)
        rows[arch] = entry
    missing = [t for t in derivable if not any(t in r["model_types"] for r in rows.values())]
    import vllm

    return {"vllm": vllm.__version__,
            "how": "ModelRegistry._try_inspect_model_cls(arch).supports_pp",
            "architectures": rows, "model_types_without_architecture": missing,
            "transformers_backend_supports_pp": backend}


def _first_words(exc: BaseException) -> str:
    """The exception's message on one line (pydantic's ValidationError puts the reason on the
    lines after "1 validation error for ...")."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return " | ".join(lines[:3])


def startup() -> list[dict[str, Any]]:
    tool = _oracle_tool()
    tool._maybe_install_torchvision_stub()
    from vllm.engine.arg_utils import EngineArgs

    out: list[dict[str, Any]] = []
    for config, kwargs, why in STARTUP_RUNS:
        tmp = tempfile.mkdtemp(prefix="pp-oracle-")
        shutil.copy(SHARED / "configs" / config, Path(tmp) / "config.json")
        line: dict[str, Any] = {"config": config, "why": why, "pipeline_parallel_size": 2,
                                "engine_args": kwargs,
                                "command": f"run_pp_oracle.py --vllm {RELEASE} startup"}
        try:
            EngineArgs(model=tmp, skip_tokenizer_init=True, load_format="dummy",
                       enforce_eager=True, pipeline_parallel_size=2, trust_remote_code=False,
                       **kwargs).create_engine_config()
            line["ok"] = True
        except Exception as exc:  # what vLLM raised is the answer being recorded
            line["ok"] = False
            line["error_type"] = type(exc).__name__
            line["error"] = _first_words(exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        out.append(line)
    return out


if __name__ == "__main__":
    if _ARGS == ["table"]:
        release_file(RELEASE, "pp-support.json").write_text(
            json.dumps(table(), indent=1, sort_keys=True) + "\n")
    elif _ARGS == ["startup"]:
        release_file(RELEASE, "pp-startup.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in startup()))
    else:
        sys.exit("usage: run_pp_oracle.py [--vllm 0.32|0.33] table|startup")
