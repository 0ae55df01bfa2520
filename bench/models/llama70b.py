"""A Llama-3-70B-shaped model (80 layers, hidden 8192, vocab 128256) with random weights, for
``--device meta``: built under ``torch.device("meta")`` by the tracer, so nothing is allocated.
(Building it on a real device would need ~280 GB.)"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

CONFIG = dict(
    num_hidden_layers=80,
    hidden_size=8192,
    intermediate_size=28672,
    num_attention_heads=64,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=8192,
)


def make_model():
    return LlamaForCausalLM(LlamaConfig(**CONFIG))


def make_inputs():
    # no KV cache: a training step's forward (the cache would be created off the meta device)
    return {"input_ids": torch.randint(0, CONFIG["vocab_size"], (1, 64)), "use_cache": False}
