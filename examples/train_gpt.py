# Bundled example for `scripts/demo.sh`: a small GPT trained with Accelerate, configured the way
# many scripts in the wild are -- and therefore with findings for regcomp-lint to report:
#   * the legacy `Accelerator(dynamo_backend=...)` keyword               (RC105, safe fix)
#   * `torch._dynamo.config.suppress_errors = True` hiding compile errors (RC107)
#   * a whole-model `torch.compile` of a model made of 8 identical blocks  (RC501, unsafe fix)
#   * a misspelled compile mode for the sampling function                 (RC102)
#   * an LR scheduler built after `prepare` and never prepared              (RC402)
# The script is never imported or run by the linter; it does run with torch + accelerate installed.
import argparse
import math
from dataclasses import dataclass

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

torch._dynamo.config.suppress_errors = True


@dataclass
class GPTConfig:
    vocab_size: int = 256  # bytes
    block_size: int = 128
    n_layer: int = 8
    n_head: int = 4
    n_embd: int = 256
    dropout: float = 0.1


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = nn.MultiheadAttention(config.n_embd, config.n_head, dropout=config.dropout, batch_first=True)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.dropout),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        mask = torch.triu(torch.full((config.block_size, config.block_size), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        x = self.tok_emb(idx) + self.pos_emb[:, :t]
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.head(self.ln_f(x))


class ByteDataset(Dataset):
    def __init__(self, text: str, block_size: int) -> None:
        self.data = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
        self.block_size = block_size

    def __len__(self) -> int:
        return max(0, len(self.data) - self.block_size - 1)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = self.data[i : i + self.block_size + 1]
        return chunk[:-1], chunk[1:]


@torch.compile(mode="reduce_overhead")
def sample_next(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
    return torch.multinomial(probs, num_samples=1)


@torch.no_grad()
def generate(model: nn.Module, config: GPTConfig, prompt: str, steps: int = 64, temperature: float = 0.8) -> str:
    model.eval()
    idx = torch.tensor([list(prompt.encode("utf-8"))], device=next(model.parameters()).device)
    for _ in range(steps):
        nxt = sample_next(model(idx[:, -config.block_size :]), temperature)
        idx = torch.cat([idx, nxt], dim=1)
    return bytes(idx[0].tolist()).decode("utf-8", errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a byte-level GPT on a text file.")
    parser.add_argument("text_file")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-4)
    args = parser.parse_args()

    accelerator = Accelerator(mixed_precision="bf16", dynamo_backend="inductor")
    config = GPTConfig()
    model = GPT(config)
    # the sampler shares the trained weights; compiled separately for fast generation
    sampler = torch.compile(model, mode="reduce-overhead")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    with open(args.text_file, encoding="utf-8") as handle:
        dataset = ByteDataset(handle.read(), config.block_size)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    total_steps = args.epochs * len(loader)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * s / max(1, total_steps))))
    model.train()
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            if step % 100 == 0:
                accelerator.print(f"epoch {epoch} step {step}: loss {loss.item():.3f}")

    if accelerator.is_main_process:
        print(generate(sampler, config, "Once upon a time"))


if __name__ == "__main__":
    main()
