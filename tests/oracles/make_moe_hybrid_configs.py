"""Write the moe-hybrid group's ``configs/*.MODIFIED.json``: real configs with one stated edit
each, for oracle runs the verbatim file cannot give (SOURCES-moe-hybrid.md lists them).

    python tests/oracles/make_moe_hybrid_configs.py

* DBRX (OME's abridged copy) with ``ffn_config.ffn_act_fn`` written as transformers' DbrxConfig
  wants it (``{"name": "silu"}`` instead of ``"silu"``, which DbrxFFNConfig rejects); the
  FFN activation caches nothing.
* granite-4-8b-dense-hybrid with ``layer_types`` edited to one attention layer in ten
  (indices 5, 15, 25, 35; the rest ``mamba``), the Granite-4.0-H layout, so the Mamba2 branch
  of ``granitemoehybrid`` can be asked of vLLM. Not a released model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "configs"


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONFIGS / name).read_text())
    return loaded


def _write(name: str, config: dict[str, Any]) -> None:
    (CONFIGS / name).write_text(json.dumps(config, indent=2) + "\n")


def main() -> None:
    dbrx = _load("databricks--dbrx.json")
    dbrx["ffn_config"]["ffn_act_fn"] = {"name": dbrx["ffn_config"]["ffn_act_fn"]}
    _write("databricks--dbrx.OME-ABRIDGED.MODIFIED.json", dbrx)

    granite = _load("ibm-granite--granite-4-8b-dense-hybrid.json")
    granite["layer_types"] = ["attention" if i % 10 == 5 else "mamba"
                              for i in range(granite["num_hidden_layers"])]
    _write("ibm-granite--granite-4-8b-dense-hybrid.MAMBA.MODIFIED.json", granite)


if __name__ == "__main__":
    main()
