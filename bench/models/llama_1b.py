"""A Llama-3.2-1B-shaped model (16 layers, hidden 2048, vocab 128256) with random weights, for
``trace --measure`` on a GPU beside Accelerate's published regional-compilation table:

    regcomp-lint trace --model bench/models/llama_1b.py:make_model --inputs bench/models/llama_1b.py:make_inputs \\
        --device cuda --measure --mixed-precision bf16 --strategies eager,full,regions,plan

A training step's batch (labels, no KV cache); the loss type is set so transformers does not
warn inside the compiled forward."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

CONFIG = dict(
    num_hidden_layers=16,
    hidden_size=2048,
    intermediate_size=8192,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=2048,
)


def make_model():
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG))
    model.loss_type = "ForCausalLM"
    return model


def make_inputs():
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 512), generator=torch.Generator().manual_seed(0))
    return {"input_ids": ids, "labels": ids, "use_cache": False}
