"""The engines kvledger plans for, one folder each: ``vllm/``, ``sglang/``, ``native/``.

``registry`` (a leaf) names them; ``base`` is the one interface (``Layout``) the API calls.
Nothing outside this folder knows an engine's rules.
"""
