"""The transformers model-class pattern against the transformers installed here (5.24)."""

from __future__ import annotations

import pytest

from regcomp_lint.knowledge.model_classes import AUTO_PREFIX, is_transformers_model_name

MODELS = [
    "GPT2LMHeadModel",
    "LlamaForCausalLM",
    "BertModel",
    "BertForSequenceClassification",
    "T5ForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",  # underscores: the lint used to miss these
    "Qwen3_5Model",
    "xLSTMForCausalLM",  # lowercase first letter
    "AutoModel",
    "AutoModelForCausalLM",
]
NOT_MODELS = [
    "PreTrainedModel",
    "PretrainedBartModel",
    "DataCollatorForLanguageModeling",  # the conversion used to call this a model
    "DataCollatorForSeq2Seq",
    "Blip2QFormerConfig",
    "ForcedBOSTokenLogitsProcessor",
    "RoFormerTokenizer",
    "AutoTokenizer",
    "AutoConfig",
    "GPT2Config",
    "TFBertModel",
    "FlaxBertModel",
]


@pytest.mark.parametrize("name", MODELS)
def test_model_classes_match_and_are_torch_models(name):
    import torch
    import transformers

    assert is_transformers_model_name(name)
    cls = getattr(transformers, name, None)
    if cls is None:  # the pattern is checked above; the class itself came in a later release
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    if name.startswith(AUTO_PREFIX):
        assert hasattr(cls, "from_pretrained") and hasattr(cls, "from_config")
    else:
        assert issubclass(cls, torch.nn.Module) and issubclass(cls, transformers.PreTrainedModel)


@pytest.mark.parametrize("name", NOT_MODELS)
def test_other_classes_do_not_match(name):
    assert not is_transformers_model_name(name)


def test_no_installed_config_tokenizer_or_collator_matches():
    import transformers

    wrong = [
        n
        for n in dir(transformers)
        if is_transformers_model_name(n)
        and n.endswith(("Config", "Tokenizer", "TokenizerFast", "Processor", "Collator", "Pipeline"))
    ]
    assert wrong == []
