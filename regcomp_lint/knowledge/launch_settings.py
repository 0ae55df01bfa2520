"""Where compilation is configured outside a ``TorchDynamoPlugin(...)`` call, and how each place
is read (accelerate 1.15.0, transformers 5.24, torch 2.13.0; checked against the installed
packages by ``tests/knowledge/test_launch_settings.py``).

- ``accelerate config`` writes a YAML file whose ``dynamo_config:`` section holds
  ``dynamo_backend`` (a ``DynamoBackend`` name, written upper-case), ``dynamo_mode``,
  ``dynamo_use_fullgraph``, ``dynamo_use_dynamic`` and ``dynamo_use_regional_compilation``
  (``accelerate/commands/config/config_args.py``; an old top-level ``dynamo_backend`` is moved
  into the section when read). ``accelerate launch`` copies them onto its arguments *without*
  argparse's ``choices`` check, then parses the backend with ``DynamoBackend(value.upper())``.
- ``accelerate launch --dynamo_backend/--dynamo_mode/--dynamo_use_*`` (``commands/launch.py``):
  ``--dynamo_backend`` only accepts lower-case names from its own list (``LAUNCH_BACKEND_CHOICES``)
  and ``--dynamo_mode`` only ``accelerate.utils.constants.TORCH_DYNAMO_MODES`` (three modes:
  ``max-autotune-no-cudagraphs`` and ``lite``, which torch accepts, are refused at launch).
- Both become ``ACCELERATE_DYNAMO_*`` variables (``utils/launch.py``), which
  ``TorchDynamoPlugin.__post_init__`` reads for every field left ``None``: a plugin that sets a
  field itself ignores the flag, the config file and the variable for that field.
- transformers ``TrainingArguments(torch_compile=, torch_compile_backend=, torch_compile_mode=)``:
  a backend or mode turns ``torch_compile`` on; the backend defaults to ``"inductor"``; the
  ``Trainer`` builds ``TorchDynamoPlugin(backend=args.torch_compile_backend,
  mode=args.torch_compile_mode, ...)``, so the backend always overrides the launch flag, and
  ``use_regional_compilation`` is left to ``ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION``.
  ``HfArgumentParser`` reads the same names as ``--torch_compile_backend`` flags and as keys of
  JSON/YAML files.
- torch reads ``TORCHDYNAMO_SUPPRESS_ERRORS`` with ``bool(os.environ.get(...))``: any non-empty
  value, ``0`` included, turns ``torch._dynamo.config.suppress_errors`` on.
"""

from __future__ import annotations

#: The section ``accelerate config`` writes compile settings into.
CONFIG_SECTION = "dynamo_config"

#: Our name for each plugin field (``PLUGIN_FIELDS``) → its spelling in each place.
CONFIG_KEYS: dict[str, str] = {
    "backend": "dynamo_backend",
    "mode": "dynamo_mode",
    "fullgraph": "dynamo_use_fullgraph",
    "dynamic": "dynamo_use_dynamic",
    "use_regional_compilation": "dynamo_use_regional_compilation",
}
LAUNCH_FLAGS: dict[str, str] = {field: "--" + key for field, key in CONFIG_KEYS.items()}
ENVIRONMENT: dict[str, str] = {field: "ACCELERATE_" + key.upper() for field, key in CONFIG_KEYS.items()}

#: ``accelerate launch --dynamo_backend`` choices: ``"no"`` and the lower-cased
#: ``accelerate.commands.config.config_utils.DYNAMO_BACKENDS``, a list of its own that is not
#: ``DynamoBackend``: it lacks ``hpu_backend`` and ``neuron`` and spells ``torhchxla_trace_once``,
#: so launch refuses ``--dynamo_backend torchxla_trace_once`` and passes the misspelling on to
#: ``DynamoBackend(...)``, which raises ``ValueError``.
LAUNCH_BACKEND_CHOICES: tuple[str, ...] = (
    "no",
    "eager",
    "aot_eager",
    "inductor",
    "aot_ts_nvfuser",
    "nvprims_nvfuser",
    "cudagraphs",
    "ofi",
    "fx2trt",
    "onnxrt",
    "tensorrt",
    "aot_torchxla_trace_once",
    "torhchxla_trace_once",
    "tvm",
)
#: ``accelerate launch --dynamo_mode`` choices (``accelerate.utils.constants.TORCH_DYNAMO_MODES``).
LAUNCH_MODE_CHOICES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune")
#: The command that launches a script with these flags; ``--config_file`` names a config YAML.
LAUNCH_COMMANDS: tuple[tuple[str, ...], ...] = (("accelerate", "launch"), ("accelerate-launch",))
CONFIG_FILE_FLAG = "--config_file"
#: Flags of ``accelerate launch`` that take no value (read from its argparse parser), in the
#: underscore spelling; launch also accepts each with ``-`` for ``_`` (``--dynamo-backend``).
LAUNCH_SWITCHES: frozenset[str] = frozenset(
    {
        "--cpu",
        "--debug",
        "--downcast_bf16",
        "--dynamo_use_dynamic",
        "--dynamo_use_fullgraph",
        "--dynamo_use_regional_compilation",
        "--enable_cpu_affinity",
        "--fp8_use_autocast_during_eval",
        "--help",
        "--module",
        "--multi_gpu",
        "--no_python",
        "--no_tpu_cluster",
        "--quiet",
        "--same_network",
        "--tpu",
        "--tpu_cluster",
        "--tpu_use_sudo",
        "--use_deepspeed",
        "--use_fsdp",
        "--use_megatron_lm",
        "--use_parallelism_config",
        "-h",
        "-m",
        "-q",
    }
)


def flag_name(word: str) -> str:
    """``--dynamo-backend`` → ``--dynamo_backend`` (argparse in accelerate registers both)."""
    if word.startswith("--"):
        return "--" + word[2:].replace("-", "_")
    return word


#: transformers ``TrainingArguments`` fields (and ``HfArgumentParser`` flags / file keys).
TRAINING_ARGUMENTS = ("transformers.TrainingArguments", "transformers.training_args.TrainingArguments")
TRAINING_ARGUMENTS_SUBCLASSES = (
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
)
TRAINER_COMPILE_FIELDS: dict[str, str] = {
    "torch_compile": "torch_compile",
    "backend": "torch_compile_backend",
    "mode": "torch_compile_mode",
}
#: What ``TrainingArguments.__post_init__`` sets when only ``torch_compile=True`` is given (CPU/GPU).
TRAINER_DEFAULT_BACKEND = "inductor"

#: torch's environment switch for ``torch._dynamo.config.suppress_errors``.
SUPPRESS_ERRORS_VARIABLE = "TORCHDYNAMO_SUPPRESS_ERRORS"

#: Substrings one of which every file holding such a setting contains (the prefilter); a
#: launch command naming a config file counts too (RC406 reads that file).
MARKERS: tuple[str, ...] = ("dynamo_", "DYNAMO_", "torch_compile", CONFIG_FILE_FLAG, "--config-file")


def is_true_word(value: str) -> bool:
    """``accelerate.utils.str_to_bool``: y, yes, t, true, on, 1 (any case) are true."""
    return value.strip().lower() in {"y", "yes", "t", "true", "on", "1"}


#: Trainers that build their ``TorchDynamoPlugin`` from ``TrainingArguments`` (``trl``'s trainers
#: derive ``transformers.Trainer``; ``model=`` is their first parameter).
TRAINERS = (
    "transformers.Trainer",
    "transformers.trainer.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer",
    "trl.SFTTrainer",
    "trl.DPOTrainer",
)
