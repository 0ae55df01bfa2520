"""Which classes build a model with repeated blocks, by name (read from transformers 5.24;
diffusers is not installed here, its names follow its documented model classes; which diffusers
classes name repeated blocks lives in ``diffusers_blocks``).

Every transformers model class (``GPT2LMHeadModel``, ``LlamaForCausalLM``, ``Qwen3_5Model``,
``AutoModelForCausalLM``) stacks identical layers, so regional compilation pays off for all of
them; configs, tokenizers, processors and data collators are not models. Both the lint (RC501)
and the conversion (``use_regional_compilation``) decide with :func:`is_transformers_model_name`.
"""

from __future__ import annotations

import re

TRANSFORMERS = "transformers"
#: ``<Name>Model``, ``<Name>LMHeadModel``, ``<Name>For<Task>``; underscores and a lowercase
#: first letter occur (``Qwen2_5_VLModel``, ``xLSTMForCausalLM``).
_MODEL_CLASS = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:Model|For[A-Z][A-Za-z0-9_]*)$")
#: transformers 4's TensorFlow/Flax twins of each torch class (``TFBertModel``): not torch modules.
OTHER_FRAMEWORK_PREFIXES = ("TF", "Flax")
#: Those, collators (``DataCollatorForLanguageModeling``) and the bare base class are not torch models.
_NOT_MODEL_PREFIXES = (*OTHER_FRAMEWORK_PREFIXES, "DataCollator", "PreTrained", "Pretrained")
#: ``Auto*`` classes are only factories: ``AutoModel(...)`` raises, ``AutoModel.from_pretrained`` builds.
AUTO_PREFIX = "Auto"
#: Class methods that build a model instance.
FACTORY_METHODS = ("from_pretrained", "from_config")
#: The ``from_pretrained`` keyword that spreads a model over devices by hand (``device_map="auto"``,
#: big-model inference); accelerate's ``prepare()`` raises "You can't train a model that has been
#: loaded with `device_map='auto'` in any distributed mode" for one spread over several devices.
DISPATCH_KEYWORD = "device_map"
#: The ``device_map`` strings that let accelerate place the layers (so possibly over several
#: devices); any other string (``"cuda"``, ``"cuda:0"``, ``"cpu"``), an int, a ``torch.device`` or
#: ``{"": d}`` names one device and loads the whole model there. With ``"cpu"`` and ``{"": "cpu"}``
#: ``hf_device_map`` stays unset (transformers 5.24) and prepare() trains the model with DDP on 2
#: gloo processes, equal weights on both ranks (measured, survey20d).
SPREADING_DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")
#: Base classes of every transformers torch model (a class deriving one is an ``nn.Module``).
PRETRAINED_MODEL = ("transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel")

DIFFUSERS = "diffusers"
#: diffusers model classes built by ``from_pretrained`` (``UNet2DConditionModel``, ``AutoencoderKL``).
DIFFUSERS_MODEL_PREFIXES = ("UNet", "Autoencoder")
DIFFUSERS_MODEL_SUFFIXES = ("Model", "Model2D", "ConditionModel")

#: Other libraries' model factories and modules of model constructors.
MODEL_FACTORIES = ("timm.create_model",)
MODEL_MODULES = ("torchvision.models.",)

#: A ``ModuleList`` of at least this many instances of one class counts as repeated blocks.
MIN_BLOCKS = 4
#: ``[copy.deepcopy(layer) for _ in range(n)]`` clones one block n times.
DEEPCOPY = ("copy.deepcopy",)


def is_transformers_model_name(name: str) -> bool:
    """True for a transformers model class name (``Auto*`` included), by its shape alone."""
    return bool(_MODEL_CLASS.match(name)) and not name.startswith(_NOT_MODEL_PREFIXES)
