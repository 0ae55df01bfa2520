"""A model loaded with from_pretrained(device_map=...) is refused (codemod/dispatched_models.py).

accelerate's prepare() raises "You can't train a model that has been loaded with
`device_map='auto'` in any distributed mode" on several processes (the survey's Qwen2.5 trainer
looped forever on it); one process would only add the compile."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from transformers import AutoModelForCausalLM


def train():
    model = AutoModelForCausalLM.from_pretrained(
        "Qwen/Qwen2.5-7B",
        dtype=torch.bfloat16,
        device_map="auto",
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for step in range(10):
        ids = torch.randint(0, 100, (2, 16))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


train()
"""


def test_a_model_loaded_with_device_map_auto_is_refused_naming_the_call_and_line():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is not None
    assert 'AutoModelForCausalLM.from_pretrained(..., device_map="auto") at line 6' in result.refused, result.refused
    assert "drop device_map" in result.refused and "convert by hand" in result.refused, result.refused


def test_any_device_map_but_none_or_one_cuda_device_is_refused():
    for device_map in ('"cpu"', '{"": "cpu"}', '"mps"', '{"": "meta"}'):
        result = convert_source(SCRIPT.replace('"auto"', device_map), "train.py")
        assert result.refused is not None and f"device_map={device_map}" in result.refused, result.refused


def test_no_device_map_or_none_converts():
    for text in (SCRIPT.replace('        device_map="auto",\n', ""), SCRIPT.replace('"auto"', "None")):
        result = convert_source(text, "train.py")
        assert result.refused is None, result.refused


def test_a_map_naming_one_cuda_device_loads_onto_each_process_own_device():
    """survey 20d's LoRA distiller (dsg_distill) loads ``device_map="cuda"``: the whole model on one
    device, which prepare() trains data-parallel (measured: ``{"": accelerator.device}`` on 2 gloo
    processes, DDP, the same losses and weights as the model loaded without a map). It was refused;
    now the map names ``accelerator.device`` and the Accelerator comes before the load."""
    for device_map in ('"cuda"', '"cuda:0"', "0", '{"": 0}', 'torch.device("cuda")', '{"": "cuda:1"}'):
        result = convert_source(SCRIPT.replace('"auto"', device_map), "train.py")
        assert result.refused is None, (device_map, result.refused)
        text = result.text
        assert 'device_map={"": accelerator.device},\n' in text, text
        assert text.index("accelerator = Accelerator(") < text.index("from_pretrained("), text
        assert any(f"device_map={device_map}" in note and "accelerator.device" in note for note in result.notes), (
            result.notes
        )


def test_a_map_that_can_spread_keeps_the_spread_reason():
    for device_map in ('"auto"', '"balanced"', '"sequential"', "args.device_map", '{"encoder": 0, "decoder": 1}'):
        result = convert_source(SCRIPT.replace('"auto"', device_map), "train.py")
        assert result.refused is not None and "spreads model over the devices" in result.refused, result.refused


def test_a_map_naming_a_device_the_script_computes_is_refused_without_a_claim_on_where():
    """``device_map={"": accelerator.local_process_index}`` (the QLoRA idiom) may well be each
    process's own device: neither "spreads" nor "all load it there" would be true."""
    result = convert_source(SCRIPT.replace('"auto"', '{"": local_rank}'), "train.py")
    assert result.refused is not None and 'device_map={"": local_rank}) at line 6' in result.refused, result.refused
    assert "spreads" not in result.refused and "every process" not in result.refused, result.refused
    assert "the device `local_rank` names" in result.refused and "convert by hand" in result.refused, result.refused


HELPERS = """\
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def load_base_model(name):
    model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
    model.eval()
    return model


def load_lora_model(name):
    model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
    model = get_peft_model(model, LoraConfig(r=8))
    return model


def run_training(name, loader):
    model = load_lora_model(name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


def test_the_refusal_names_the_load_the_training_uses_not_a_helper_it_never_calls():
    """memz's LoRA trainer (survey 21f): load_base_model() is never called; the refusal named its
    line 7 rather than load_lora_model()'s line 13, which builds the trained model."""
    result = convert_source(HELPERS, "train.py")
    assert result.refused is not None
    assert 'AutoModelForCausalLM.from_pretrained(..., device_map="auto") at line 13' in result.refused, result.refused


def test_a_device_map_only_in_a_helper_never_called_does_not_refuse():
    text = HELPERS.replace(
        'model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")\n    model = get_peft',
        "model = AutoModelForCausalLM.from_pretrained(name)\n    model = get_peft",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None or "device_map" not in result.refused, result.refused


MODULE_LOADER = """\
import torch
from transformers import AutoModelForCausalLM


def load_draft(*, base_name, dtype, device_map="auto", use_cache=False):
    model = AutoModelForCausalLM.from_pretrained(
        base_name,
        torch_dtype=dtype,
        device_map=device_map,
    )
    model.config.use_cache = use_cache
    return model
"""

MODULE_SCRIPT = SCRIPT.replace(
    "from transformers import AutoModelForCausalLM\n", "from src.models.load import load_draft\n"
).replace(
    'AutoModelForCausalLM.from_pretrained(\n        "Qwen/Qwen2.5-7B",\n        dtype=torch.bfloat16,\n',
    'load_draft(\n        base_name="Qwen/Qwen2.5-0.5B",\n        dtype=torch.bfloat16,\n',
)


def _project(tmp_path, loader: str = MODULE_LOADER) -> str:
    (tmp_path / "src" / "models").mkdir(parents=True)
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "models" / "__init__.py").write_text("")
    (tmp_path / "src" / "models" / "load.py").write_text(loader)
    return str(tmp_path / "train.py")


def test_a_device_map_handed_to_a_project_module_loader_is_refused_naming_its_file_and_line(tmp_path):
    """kd_topk (survey 24b): ``load_draft_with_lora(..., device_map="auto")`` of src/models/load.py
    hands the map on to ``from_pretrained``; the in-file rule did not follow it, and the script
    converted to a model prepare() refuses to train on several processes."""
    result = convert_source(MODULE_SCRIPT, _project(tmp_path))
    assert result.refused is not None, result.notes
    refused = result.refused
    assert 'load_draft(...) at line 6 (device_map="auto")' in refused, refused
    assert "AutoModelForCausalLM.from_pretrained(..., device_map=device_map) at src/models/load.py:6" in refused, (
        refused
    )
    assert "spreads model over the devices by hand" in refused, refused


def test_the_module_loader_default_counts_when_the_script_passes_none(tmp_path):
    script = MODULE_SCRIPT.replace('        device_map="auto",\n', "")
    result = convert_source(script, _project(tmp_path))
    assert result.refused is not None and "src/models/load.py:6" in result.refused, result.refused
    assert "device_map='auto', its default" in result.refused, result.refused


def test_a_module_loader_handed_device_map_none_converts(tmp_path):
    result = convert_source(MODULE_SCRIPT.replace('device_map="auto"', "device_map=None"), _project(tmp_path))
    assert result.refused is None, result.refused


def test_a_module_loader_without_a_device_map_converts(tmp_path):
    loader = MODULE_LOADER.replace("        device_map=device_map,\n", "")
    result = convert_source(MODULE_SCRIPT, _project(tmp_path, loader))
    assert result.refused is None, result.refused
