"""transformers' own bookkeeping keys: one vocabulary the guard accepts on every level.

Every config class inherits these from transformers' base class, and ``save_pretrained``
writes them into any config.json it re-saves, whatever the model type. They record where the
file came from, how transformers' *own* modelling code should run (which attention kernel,
what a forward returns), a classification head's labels, or generation defaults. None of them
reaches the layers vLLM builds, so none can change a cache; several contain a word of the
guard's cache-affecting pattern (``attn``, ``cache``, ``chunk``, ``head``, ``encoder``,
``decoder``, ``cross``, ``dtype``), and listing them row by row would be a per-row exception
for what is one fact about transformers.

Where the keys come from (transformers source, ``src/transformers/configuration_utils.py``):

- 4.x ``PretrainedConfig.__init__`` (the releases most published checkpoints were saved
  with) pops, in order: ``return_dict``, ``output_hidden_states``, ``output_attentions``,
  ``torchscript``, ``torch_dtype``, ``use_bfloat16``, ``tf_legacy_loss``, ``pruned_heads``,
  ``tie_word_embeddings``, ``chunk_size_feed_forward``, ``is_encoder_decoder``, ``is_decoder``,
  ``cross_attention_hidden_size``, ``add_cross_attention``, ``tie_encoder_decoder``, the
  generation defaults of ``_get_global_generation_defaults``, ``architectures``,
  ``finetuning_task``, ``id2label``, ``label2id``, ``num_labels``, ``tokenizer_class``,
  ``prefix``, the ``bos``/``pad``/``eos``/``sep``/``decoder_start`` token ids,
  ``task_specific_params``, ``problem_type``, ``xla_device``, ``name_or_path`` (kept as
  ``_name_or_path``), ``_commit_hash``, ``attn_implementation`` (kept as
  ``_attn_implementation_internal``), then sets ``_attn_implementation_autoset = False`` and
  pops ``transformers_version`` and ``gradient_checkpointing``.
- 5.x ``PreTrainedConfig`` declares the class fields ``transformers_version``,
  ``architectures``, ``output_hidden_states``, ``return_dict``, ``dtype``,
  ``chunk_size_feed_forward``, ``is_encoder_decoder``, ``id2label``, ``label2id`` and
  ``problem_type``; its ``__post_init__`` takes ``torch_dtype`` as an alias of ``dtype``,
  ``num_labels``, ``name_or_path``, ``_commit_hash``, ``output_attentions`` (kept as
  ``_output_attentions``), ``attn_implementation`` and ``experts_implementation``, drops the
  serialised ``_attn_implementation_internal`` / ``_experts_implementation_internal``, and pops
  every key of ``GenerationConfig._get_default_generation_params()``
  (``generation/configuration_utils.py``) so the config object never holds them.

Not here, on purpose: ``per_layer_config`` (5.x ``HeterogeneousConfigMixin``: per-layer
overrides of real sizes, which can change a cache) and ``model_type`` (derive reads it). The
dtype aliases are listed for completeness; derive reads them as the model dtype
(``model_types.CORE_KEYS``), so they are known to the guard either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_SAVED = ("written by transformers when it saves or loads a config (its version, the "
          "checkpoint's name, the classes that can load it): names the file, sizes nothing")
_KERNEL = ("which attention / experts kernel transformers' own modelling code dispatches to; "
           "vLLM selects its own attention backend and never reads it")
_OUTPUT = ("what a transformers forward returns or how transformers runs it (tuples, hidden "
           "states, attention maps, TorchScript, feed-forward chunking); no model state")
_TASK = "a fine-tuning task's labels or tokenizer hint; no generative layer is built from it"
_TOKEN = "a special token id: which token, not what is cached"
_ENCDEC = ("transformers' encoder-decoder plumbing flags; vLLM builds the layers from its "
           "model file, not from these")
_TRAIN = "a training-time switch (gradient checkpointing, TPU, loss); inference ignores it"
_WEIGHTS = "whether the output projection reuses the embedding matrix or holds pruned heads: "\
           "weights, not cache"
_GENERATION = ("a generation default; transformers 5 pops it from the model config "
               "(PreTrainedConfig.__post_init__) and vLLM takes sampling from the request")
_DTYPE = "the weights' dtype; derive reads it as the model dtype (model_types.CORE_KEYS)"

_USE_CACHE = ("whether transformers' generate() keeps a KV cache; vLLM always keeps one, "
              "sized by its own rules")
_GENERATION_KEYS = (
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
    "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
    "begin_suppress_tokens", "epsilon_cutoff", "eta_cutoff", "encoder_repetition_penalty",
    "num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold",
    "assistant_lookbehind", "target_lookbehind",
)

BOOKKEEPING: Mapping[str, str] = MappingProxyType({
    **dict.fromkeys(("transformers_version", "architectures", "_name_or_path", "name_or_path",
                     "_commit_hash"), _SAVED),
    **dict.fromkeys(("_attn_implementation_autoset", "attn_implementation",
                     "_attn_implementation", "_attn_implementation_internal",
                     "experts_implementation", "_experts_implementation",
                     "_experts_implementation_internal"), _KERNEL),
    **dict.fromkeys(("return_dict", "output_hidden_states", "output_attentions",
                     "_output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss",
                     "chunk_size_feed_forward"), _OUTPUT),
    **dict.fromkeys(("pruned_heads", "tie_word_embeddings"), _WEIGHTS),
    **dict.fromkeys(("is_encoder_decoder", "is_decoder", "cross_attention_hidden_size",
                     "add_cross_attention", "tie_encoder_decoder"), _ENCDEC),
    **dict.fromkeys(("id2label", "label2id", "num_labels", "problem_type", "finetuning_task",
                     "task_specific_params", "tokenizer_class", "prefix"), _TASK),
    **dict.fromkeys(("bos_token_id", "pad_token_id", "eos_token_id", "sep_token_id",
                     "decoder_start_token_id"), _TOKEN),
    **dict.fromkeys(("gradient_checkpointing", "xla_device", "loss_type"), _TRAIN),
    **dict.fromkeys(_GENERATION_KEYS, _GENERATION),
    "use_cache": _USE_CACHE,
    **dict.fromkeys(("torch_dtype", "dtype"), _DTYPE),
})
"""Every key transformers' base config class reads, sets or pops (module docstring) → why it
cannot change a cache. The guard accepts these on every level of every row
(``guard.known_keys``); a row's ``off`` list is still checked first, so a row that must refuse
one of them switched on (GPT-2's ``add_cross_attention``) still does."""
