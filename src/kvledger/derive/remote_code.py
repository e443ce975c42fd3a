"""Remote-code model types: planned from what config.json states, never from guessed defaults.

Some popular checkpoints (InternLM2, MiniCPM, EXAONE 3.x, DeepSeek-MoE v1, Orion, Ling, ...)
carry a ``model_type`` that neither transformers 5.19 nor vLLM 0.32's own config registry
(vllm/transformers_utils/config.py ``_CONFIG_REGISTRY``) has a class for. vLLM 0.32 loads their
config.json only with ``--trust-remote-code``, by running the checkpoint's own
``configuration_*.py`` (``HFConfigParser.parse`` → ``AutoConfig.from_pretrained``); its
*model*, though, is its own (model_executor/models/registry.py ``_TEXT_GENERATION_MODELS``:
internlm2.py, minicpm.py, ...), and that model reads plain attributes of the config object.

kvledger does not run remote code. So for these types it reads only what config.json states,
and the policy is:

* every key vLLM's model file reads to size the cache (named in the row's ``stated`` field,
  citing the file) must be stated in config.json: a key the file omits would take the remote
  class's default, which kvledger cannot know, so the config is refused naming the key;
* keys whose effect would depend on that remote class are not read at all: the guard
  (derive/guard.py) refuses any cache-affecting key the row does not list, as for every type;
* the checks are replayed against vLLM given exactly the stated keys
  (tests/oracles/run_remote_oracle.py: a plain ``PretrainedConfig`` built ``from_dict``, with
  --trust-remote-code), which is what a remote class with no defaults in play produces.

Types whose remote class is not covered keep a refusal in the model-type table saying why.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.derive.model_types import Resolved


def check_stated(cfg: Config, row: Resolved) -> None:
    """Raise naming the first of ``row.stated`` that ``cfg`` does not state (or states null).

    Only the file's own keys count: a row of a remote-code type has no ``defaults``, and a
    key stated as null would reach vLLM's model as ``None``, not as a size.
    """
    for key in sorted(row.stated):
        if cfg.raw.get(key) is None:
            name = cfg.model_type or row.name
            raise UnsupportedArchitecture(
                f"unsupported: {name} config does not state {key}; model_type '{name}' has no "
                "transformers 5.19 or vLLM config class (vLLM loads it with "
                f"--trust-remote-code), so {key} would take the default of the checkpoint's "
                "own configuration code, which kvledger does not run; vLLM's "
                f"{row.vllm or 'model'} reads it",
                model_type=name,
                architectures=cfg.architectures,
            )
