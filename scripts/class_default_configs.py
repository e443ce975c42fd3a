"""Write a model type's config-class defaults as a config.json kvledger and vLLM can read.

For a model type with a transformers config class but no real checkpoint config at hand, the
class's own defaults are a config the project can generate (nothing fetched): this script
instantiates the class with no arguments and writes its ``to_dict()`` to
``tests/data/class-default-configs/<model_type>.json``. Two keys are set beyond the class's:
``architectures`` (the class leaves it None, and vLLM picks its model by it; the value is the
architecture the table below names) and ``dtype`` "bfloat16" (the class leaves it None, and vLLM
would then run a float32 config in float16 or bfloat16 depending on the platform). Both are
recorded under ``_generated_by`` in the file, with the transformers version.

Run with a transformers 5.x installed OUTSIDE the repository (it is not a project dependency),
e.g. the vLLM oracle's venv, which holds the transformers vLLM runs with:

    /work/venvs/vllm032/bin/python scripts/class_default_configs.py [MODEL_TYPE ...]

Without arguments it writes every model type below, and the ``VARIANTS`` (the class given
arguments, named ``<model_type>.<variant>.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "class-default-configs"

# model_type -> (transformers config class, the architecture vLLM's registry serves it as)
CLASSES: dict[str, tuple[str, str]] = {
    "glm4_moe_lite": ("Glm4MoeLiteConfig", "Glm4MoeLiteForCausalLM"),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM"),
    "glm4": ("Glm4Config", "Glm4ForCausalLM"),
    "apertus": ("ApertusConfig", "ApertusForCausalLM"),
    "seed_oss": ("SeedOssConfig", "SeedOssForCausalLM"),
    "granitemoeshared": ("GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM"),
    "lfm2_moe": ("Lfm2MoeConfig", "Lfm2MoeForCausalLM"),
    "exaone_moe": ("ExaoneMoeConfig", "ExaoneMoeForCausalLM"),
    "olmo_hybrid": ("OlmoHybridConfig", "OlmoHybridForCausalLM"),
    # served by vLLM's Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS)
    "olmo": ("OlmoConfig", "OlmoForCausalLM"),
    "glm": ("GlmConfig", "GlmForCausalLM"),
    "arcee": ("ArceeConfig", "ArceeForCausalLM"),
    "cwm": ("CwmConfig", "CwmForCausalLM"),
    "jais2": ("Jais2Config", "Jais2ForCausalLM"),
    "vaultgemma": ("VaultGemmaConfig", "VaultGemmaForCausalLM"),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM"),
    "flex_olmo": ("FlexOlmoConfig", "FlexOlmoForCausalLM"),
    "hunyuan_v1_dense": ("HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM"),
}
# A class-default config with arguments, for a model type whose class leaves a key vLLM
# indexes unset: name -> (model_type, the arguments given to the class)
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    # Lfm2MoeConfig builds no layer_types; every 4th layer attention, the others short conv.
    "lfm2_moe.layer-types": ("lfm2_moe", {"layer_types": [
        "full_attention" if i % 4 == 3 else "conv" for i in range(32)]}),
}


def generate(name: str) -> Path:
    import transformers  # the scratch venv's, never the project's

    model_type, arguments = VARIANTS.get(name, (name, {}))
    class_name, architecture = CLASSES[model_type]
    config = getattr(transformers, class_name)(**arguments)
    if config.model_type != model_type:
        raise SystemExit(f"{class_name} is model_type {config.model_type!r}, not {model_type!r}")
    data = config.to_dict()
    data["architectures"] = [architecture]
    data["dtype"] = "bfloat16"
    data["_generated_by"] = {
        "by": "scripts/class_default_configs.py",
        "config_class": class_name,
        "transformers_version": transformers.__version__,
        "set_beyond_the_class": ["architectures", "dtype"],
        "class_arguments": sorted(arguments),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str]) -> int:
    wanted = argv or [*CLASSES, *VARIANTS]
    unknown = [m for m in wanted if m not in CLASSES and m not in VARIANTS]
    if unknown:
        print(f"class_default_configs: not in the table: {', '.join(unknown)}", file=sys.stderr)
        return 2
    for model_type in wanted:
        print(generate(model_type))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
