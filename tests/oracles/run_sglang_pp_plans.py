"""Which of SGLang's Transformers-backend architectures it can split into pipeline stages.

A research tool, never imported by the package or the tests. It needs the SGLang venv
(``../shared/oracles/sglang-tool/README.md``), from the repository root:

    /work/oracle/sglang/venv/bin/python tests/oracles/run_sglang_pp_plans.py

SGLang 0.5.23 builds an architecture it has no class for with its Transformers backend, and
with pp_size > 1 that backend's ``TransformersBase.pipeline_parallel``
(srt/models/transformers.py) raises ``ValueError("<class> does not support pipeline parallel
yet!")`` when ``_get_model_pp_plan`` is empty: ``self.model`` (``AutoModel.from_config``) has no
``_pp_plan`` / ``pp_plan``, and neither ``self.model.config`` nor the text config
(``get_hf_text_config``) states ``base_model_pp_plan``. The SGLang oracle tool pins
``pp_size=1``, so this script evaluates that same expression with transformers 5.19 on the
config of each architecture's oracle case (``served.TRANSFORMERS_BACKEND``), building the base
model on the meta device, and writes ``sglang-0.5.23-pp-plans.json`` beside itself:
architecture → whether a pipeline plan exists. When ``AutoModel`` cannot build the config
(Qwen2.5-Omni's), the config-level attributes alone decide and ``model_built`` says so.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import real_configs  # noqa: E402

ROOT = HERE.parents[1]
SHARED = ROOT / ".." / "shared"


def _configs() -> dict[str, Path]:
    """First architecture → one real config naming it (tests/ first, then ../shared)."""
    found: dict[str, Path] = {}
    paths = sorted(ROOT.glob("tests/**/*.json")) + sorted(SHARED.glob("configs/*.json"))
    for path, data in real_configs(paths):
        archs = data.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            found.setdefault(archs[0], path)
    return found


def main() -> dict[str, Any]:
    import torch
    from sglang.srt.configs.model_config import get_hf_text_config
    from transformers import AutoConfig, AutoModel

    sys.path.insert(0, str(ROOT / "src"))
    from kvledger.plan.engines.sglang.served import TRANSFORMERS_BACKEND

    configs = _configs()
    out: dict[str, Any] = {}
    for arch in sorted(TRANSFORMERS_BACKEND):
        path = configs[arch]
        tmp = tempfile.mkdtemp(prefix="sglang-pp-")
        try:
            shutil.copy(path, Path(tmp) / "config.json")
            config = AutoConfig.from_pretrained(tmp)
            text = get_hf_text_config(config)
            model: Any = None
            try:
                with torch.device("meta"):
                    model = AutoModel.from_config(config)
            except ValueError:
                model = None
            plan = ((getattr(model, "_pp_plan", None) if model is not None else None)
                    or (getattr(model, "pp_plan", None) if model is not None else None)
                    or getattr(getattr(model, "config", config), "base_model_pp_plan", None)
                    or getattr(text, "base_model_pp_plan", None) or {})
            out[arch] = {"config": path.name, "model_built": model is not None,
                         "base_model": type(model).__name__ if model is not None else None,
                         "has_pp_plan": bool(plan)}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    result = main()
    (HERE / "sglang-0.5.23-pp-plans.json").write_text(
        json.dumps(result, indent=1, sort_keys=True) + "\n")
