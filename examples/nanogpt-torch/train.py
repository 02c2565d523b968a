"""Trains a tiny byte-level GPT (nanoGPT style) and exports it for eval.py.

Variable: the researcher may change anything here. The contract with the
fixed eval is the checkpoint: a TorchScript module at ckpt/model.pt that maps
int64 bytes of shape (EVAL_BATCH, CONTEXT_LEN) to logits of shape
(EVAL_BATCH, CONTEXT_LEN, VOCAB_SIZE), position t seeing only bytes <= t.

Run by itself it trains in one process; started by torchrun
(`torchrun --standalone --nproc_per_node=N train.py`) it trains with
DistributedDataParallel, one process per GPU over NCCL, or N processes on
the CPU over gloo. batch_size is the global batch either way: each of the
N processes trains on its 1/N of the same sequences, so the hyperparameters
mean the same training whatever N is.
"""
import json
import math
import os
import re
import sys
import time

# Idle OpenMP threads sleep instead of spinning: on a shared CPU, spinning
# threads starve each other and a step becomes many times slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from kernels import rmsnorm
from prepare import CONTEXT_LEN, EVAL_BATCH, TRAIN_PATH, VOCAB_SIZE, load_split

START = time.time()

# Model
n_layer = 2
n_head = 4
n_embd = 64
head_dim = n_embd // n_head
block_size = CONTEXT_LEN  # the eval scores at CONTEXT_LEN, so the model must reach it
dropout = 0.0

# Training
batch_size = 16
learning_rate = 1e-3
weight_decay = 0.1
warmup_steps = 20
max_steps = 200
grad_clip = 1.0
# autoresearch:fixed-begin: the seed is part of the protocol.
seed = 1337
# autoresearch:fixed-end
log_every = 25

CKPT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ckpt")
CKPT_PATH = os.path.join(CKPT_DIR, "model.pt")
# Time kept back from the budget for exporting the checkpoint.
EXPORT_RESERVE_S = 3.0


def parse_duration(text):
    """Parses a Go duration string such as "90s", "5m0s" or "1h30m" into seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rmsnorm(x, self.weight)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.drop = nn.Dropout(dropout)
        # A buffer rather than a tensor made in forward(), so that the traced
        # module follows map_location to whichever device eval.py picks; of
        # floats, since DDP broadcasts buffers and gloo has no bool tensors.
        mask = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, head_dim).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = self.drop(F.softmax(att, dim=-1)) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = RMSNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.norm2 = RMSNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd, bias=False),
            nn.GELU(),
            nn.Linear(4 * n_embd, n_embd, bias=False),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB_SIZE, n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, block_size, n_embd))
        self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
        self.norm = RMSNorm(n_embd)
        self.head = nn.Linear(n_embd, VOCAB_SIZE, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying
        self.apply(self._init)
        nn.init.normal_(self.pos_emb, std=0.02)

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb[:, : idx.shape[1]]
        return self.head(self.norm(self.blocks(x)))


def lr_at(step):
    if step < warmup_steps:
        return learning_rate * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    return learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def start_processes():
    """Joins torchrun's process group when torchrun started this process.
    Returns (rank, world size, device)."""
    if "WORLD_SIZE" not in os.environ:
        return 0, 1, "cuda" if torch.cuda.is_available() else "cpu"
    if torch.cuda.is_available():
        device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
        torch.cuda.set_device(device)
        dist.init_process_group("nccl")
    else:
        device = "cpu"
        dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size(), device


def all_ranks_agree(flag, world, device):
    """Whether flag holds on any rank: every rank must leave the loop at the
    same step, or the others wait for it forever."""
    if world == 1:
        return flag
    t = torch.tensor([float(flag)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item() > 0


def mean_over_ranks(value, world, device):
    if world == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.item() / world


def end_processes():
    """Ends this process of torchrun's group once every rank is done: at
    once, without tearing the group down, since in PyTorch 1.13 a gloo
    group's destructor can deadlock (it joins a worker thread that waits for
    the interpreter lock the destructor holds)."""
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def export(model, meta):
    """Saves the model as TorchScript, traced on the CPU so that the file does
    not depend on the training device."""
    model = model.to("cpu").eval()
    example = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
    with torch.no_grad():
        traced = torch.jit.trace(model, example)
    os.makedirs(CKPT_DIR, exist_ok=True)
    tmp = CKPT_PATH + ".tmp"
    torch.jit.save(traced, tmp, _extra_files={"meta.json": json.dumps(meta)})
    os.replace(tmp, CKPT_PATH)


def main():
    # autoresearch:fixed-begin: training keeps to the protocol's time limit.
    limit_env = os.environ.get("AUTORESEARCH_TIME_LIMIT", "")
    time_limit = parse_duration(limit_env) if limit_env else None
    # autoresearch:fixed-end
    rank, world, device = start_processes()
    if batch_size % world != 0:
        print(f"batch_size {batch_size} does not divide among {world} processes", flush=True)
        sys.exit(1)
    local_batch = batch_size // world
    if device == "cpu":
        # Two cores in all.
        torch.set_num_threads(max(1, 2 // world))
    torch.manual_seed(seed)

    data = torch.frombuffer(bytearray(load_split(TRAIN_PATH)), dtype=torch.uint8).long()
    # Every rank builds the same model from the seed; DDP also broadcasts
    # rank 0's weights.
    model = GPT().to(device)
    raw_model = model
    if world > 1:
        model = DistributedDataParallel(model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
        betas=(0.9, 0.95),
    )
    n_params = sum(p.numel() for p in raw_model.parameters())
    if rank == 0:
        print(f"device: {device} processes: {world} params: {n_params} time_limit: {limit_env or 'none'}", flush=True)

    # The same generator on every rank draws the same global batch; each
    # rank trains on its slice of it.
    gen = torch.Generator().manual_seed(seed)
    model.train()
    step, loss_value = 0, float("nan")
    for step in range(1, max_steps + 1):
        over = time_limit is not None and time.time() - START > time_limit - EXPORT_RESERVE_S
        if time_limit is not None and all_ranks_agree(over, world, device):
            if rank == 0:
                print(f"time budget reached after {step - 1} steps", flush=True)
            step -= 1
            break
        ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=gen)
        ix = ix[rank * local_batch : (rank + 1) * local_batch]
        x = torch.stack([data[i : i + block_size] for i in ix]).to(device)
        y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix]).to(device)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step - 1)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), y.reshape(-1))
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print(f"step {step} loss={loss_value}", flush=True)
            print("FAIL")
            sys.exit(1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        if step % log_every == 0:
            loss_value = mean_over_ranks(loss_value, world, device)
            if rank == 0:
                print(f"step {step} loss={loss_value:.4f}", flush=True)
    if step % log_every != 0 and math.isfinite(loss_value):
        loss_value = mean_over_ranks(loss_value, world, device)
        if rank == 0:
            print(f"step {step} loss={loss_value:.4f}", flush=True)

    train_seconds = time.time() - START
    peak_vram_mb = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else 0
    if rank == 0:
        export(raw_model, {"steps": step, "final_loss": loss_value, "params": n_params, "device": device, "processes": world})
        print(f"training_seconds: {train_seconds:.1f}")
        print(f"peak_vram_mb: {peak_vram_mb:.0f}")
    if world > 1:
        end_processes()


if __name__ == "__main__":
    main()
