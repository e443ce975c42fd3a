"""Ask vLLM 0.32 (the shared oracle) about the MoE and Mamba mixer configs (OLMoE, Granite
MoE, Trinity, Falcon-H1, falcon-mamba), one run at a time.

A research tool, never imported by the package or the tests; the same procedure as
``run_moe_hybrid.py`` (whose ``run_all`` it reuses), writing
``vllm-0.32-coverage-moe-hybrid2.jsonl`` instead.

    python tests/oracles/run_moe_mixers_oracle.py [SUBSTRING ...]    # default: every run below
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_moe_hybrid import run_all

OUT = Path(__file__).resolve().parent / "vllm-0.32" / "vllm-0.32-coverage-moe-hybrid2.jsonl"

# (config file under configs/, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("allenai--OLMoE-1B-7B.mbridge.json", ["--max-model-len", "4096"],
     "olmoe default run: 16 KV heads x 2048 / 16 = 128 on 16 layers (olmoe.py computes the "
     "head dim)"),
    ("allenai--OLMoE-1B-7B.mbridge.json",
     ["--max-model-len", "4096", "--tp", "2", "--kv-cache-dtype", "fp8"],
     "olmoe at TP 2 with an fp8 cache: 8 KV heads per rank, uint8 pages"),
    ("tiiuae--Falcon-H1-0.5B.mbridge.json", ["--max-model-len", "16384"],
     "falcon_h1, Megatron-Bridge's abridged dict (no mamba_d_ssm): FalconH1Config fills in "
     "1024 and rejects 24 x 64 heads; expected to fail (a refusal, not a case)"),
    ("tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json", ["--max-model-len", "16384"],
     "falcon_h1 default run: attention and a Mamba2 mixer in every one of 36 layers "
     "(vLLM names the mixer layer num_hidden_layers + i)"),
    ("tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json",
     ["--max-model-len", "16384", "--no-enable-prefix-caching"],
     "falcon_h1 without prefix caching: mamba_cache_mode none, one state per request"),
    ("tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json",
     ["--max-model-len", "16384", "--tp", "2"],
     "falcon_h1 at TP 2: 24 Mamba heads split 12 per rank, one group replicated per rank "
     "(extra_groups_for_head_shards), 2 KV heads 1 per rank"),
    ("tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json",
     ["--max-model-len", "16384", "--kv-cache-dtype", "fp8"],
     "falcon_h1 with an fp8 cache: attention pages halve (256 B/token), the Mamba2 state stays "
     "bf16, so the attention block grows to hold it"),
    ("tiiuae--falcon-mamba-7b.mlstm.json", [],
     "falcon_mamba default run (no max-positions key): mamba.py Mamba1 state on 64 layers, "
     "intermediate_size = expand x hidden_size as FalconMambaConfig sets it"),
    ("tiiuae--falcon-mamba-7b.mlstm.json", ["--tp", "2"],
     "falcon_mamba at TP 2: the Mamba1 intermediate split per rank"),
    ("ibm-granite--granite-3.1-1b-a400m-instruct.json", ["--max-model-len", "32768"],
     "granitemoe default run: 8 KV heads x 1024 / 16 = 64 on 24 layers (granitemoe.py computes "
     "the head dim)"),
    ("ibm-granite--granite-3.1-1b-a400m-instruct.json",
     ["--max-model-len", "32768", "--tp", "2", "--kv-cache-dtype", "fp8"],
     "granitemoe at TP 2 with an fp8 cache: 4 KV heads per rank, uint8 pages"),
    ("ibm-granite--granite-3.0-1b-a400m-instruct.json", ["--max-model-len", "4096"],
     "granitemoe, Granite-3.0 (4096 positions): the same attention"),
    ("arcee-ai--Trinity-Nano-Preview.neuronx.json", ["--max-model-len", "32768"],
     "afmoe default run: layer_types rebuilt by AfmoeConfig (every 4th layer full), 2 KV heads "
     "x head_dim 128, window 2048 on the other 42 of 56 layers"),
    ("arcee-ai--Trinity-Nano-Preview.neuronx.json",
     ["--max-model-len", "32768", "--tp", "2", "--kv-cache-dtype", "fp8"],
     "afmoe at TP 2 with an fp8 cache: 1 KV head per rank, sliding and full groups"),
]


def main(argv: list[str]) -> None:
    run_all(RUNS, argv, OUT, concurrency=False)


if __name__ == "__main__":
    main(sys.argv[1:])
