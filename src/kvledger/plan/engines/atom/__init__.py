"""The ATOM layout (``--engine atom``): the KV pools AMD's ATOM inference engine sizes.

ATOM (github.com/ROCm/ATOM) sizes its KV cache with the byte-currency pool planner this
project's seed B describes (``atom/model_ops/attentions/sub_pool_spec.py``): each attention
backend declares its entry classes, ``ModelRunner.get_num_blocks`` computes the byte budget
and calls ``plan_pools``. kvledger reproduces both halves from the config alone, with its own
``kvledger.declare.pools.plan_pools``.

One module per concept: ``releases`` (the commit read, its defaults, flag names and log
lines), ``served`` (the architectures ATOM's model registry serves and which backend each
selects), ``specs`` (each backend's entry classes), ``v4`` (DeepSeek-V4's row space),
``budget`` (``get_num_blocks``' budget on a GPU preset), ``refusal`` (ATOM's refusal texts),
``layout`` (the plan per stage), ``engine`` (``AtomEngine(Layout)``).
"""
