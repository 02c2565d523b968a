"""Writes ckpt/model.pt, in the nanogpt-torch example's directory (the
working directory), as the model argv[1] names: the honest uniform model, or
one that reads ahead of the byte it predicts where it hopes the evaluation
does not look. Each cheat got a better val_bpb than honest work from an
evaluation that checked causality on its first batch only, or (remembers)
that called one module for every batch, or (next-row) whose batches were
consecutive windows."""
import os
import sys
import warnings
from typing import List

import torch

sys.path.insert(0, os.getcwd())
from prepare import CONTEXT_LEN, EVAL_BATCH, VAL_PATH, VOCAB_SIZE, load_split

# The first byte of each row of the first batch: what every check of it keeps.
FIRST = torch.frombuffer(bytearray(load_split(VAL_PATH)[: EVAL_BATCH * CONTEXT_LEN : CONTEXT_LEN]), dtype=torch.uint8).long()


def peek(x):
    """Logits that put nearly all the mass on the next byte: reading ahead."""
    nxt = torch.cat([x[:, 1:], x[:, -1:]], dim=1)
    return torch.nn.functional.one_hot(nxt, VOCAB_SIZE).float() * 30.0


class Uniform(torch.nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE)


class CountsCalls(torch.nn.Module):
    """Causal for the calls the first batch's check makes, then reads ahead."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        cheat = (self.calls > 4).float()
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + cheat * peek(x)


class KnowsTheFirstBatch(torch.nn.Module):
    """Keeps no state: causal when its input starts as the validation split
    does, which is the batch the evaluation used to check, and reads ahead
    otherwise."""

    def forward(self, x):
        first = (x[:, 0] == FIRST).all().float()
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + (1 - first) * peek(x)


def scripted_peek(x: torch.Tensor) -> torch.Tensor:
    nxt = torch.cat([x[:, 1:], x[:, -1:]], dim=1)
    return torch.nn.functional.one_hot(nxt, 256).float() * 30.0


class SetsAttr(torch.nn.Module):
    """Counts its calls in an attribute: causal for the first batch's check."""

    calls: int

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.zeros(x.shape[0], x.shape[1], 256)
        if self.calls > 4:
            out = out + scripted_peek(x)
        return out


class KeepsInputs(torch.nn.Module):
    """Counts its calls by the inputs it keeps."""

    seen: List[torch.Tensor]

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x)
        out = torch.zeros(x.shape[0], x.shape[1], 256)
        if len(self.seen) > 4:
            out = out + scripted_peek(x)
        return out


class Remembers(torch.nn.Module):
    """Keeps the batch it is scored on in a plain tensor attribute, neither
    a parameter nor a buffer, and reads ahead in it; a check of that batch,
    which keeps its first bytes, gets the same logits from it."""

    def __init__(self):
        super().__init__()
        self.mem = torch.full((16, 64), -1, dtype=torch.long)

    def forward(self, x):
        same = (x == self.mem).all(dim=0)
        src = x
        if bool(same[0]) and not bool(same.all()):
            src = self.mem.clone()
        else:
            self.mem.copy_(x)
        out = scripted_peek(src)
        out[:, -1, :] = 0.0
        return out


class NextRow(torch.nn.Module):
    """Predicts each row's last byte from the next row's first: where a
    batch's rows are consecutive windows, that is its target."""

    def forward(self, x):
        nxt = torch.nn.functional.one_hot(x.roll(-1, dims=0)[:, 0], VOCAB_SIZE).float() * 30.0
        mask = torch.zeros(1, x.shape[1], 1)
        mask[0, -1, 0] = 1.0
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + mask * nxt.unsqueeze(1)


class Warns(torch.nn.Module):
    """Prints through a warning."""

    def forward(self, x):
        warnings.warn("val_bpb: 0.000001")
        return torch.zeros(x.shape[0], x.shape[1], 256)


class Prints(torch.nn.Module):
    """Prints a metric line of its own."""

    def forward(self, x):
        print("val_bpb: 0.000001")
        return torch.zeros(x.shape[0], x.shape[1], 256)


models = {"uniform": Uniform, "counts-calls": CountsCalls, "knows-the-first-batch": KnowsTheFirstBatch,
          "sets-attr": SetsAttr, "prints": Prints, "keeps-inputs": KeepsInputs, "remembers": Remembers,
          "next-row": NextRow, "warns": Warns}
model = models[sys.argv[1]]().eval()
example = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
if sys.argv[1] in ("sets-attr", "prints", "keeps-inputs", "remembers", "warns"):
    module = torch.jit.script(model)
else:
    with torch.no_grad():
        module = torch.jit.trace(model, example, check_trace=False)
if sys.argv[1] == "counts-calls":
    module.calls.zero_()
os.makedirs("ckpt", exist_ok=True)
torch.jit.save(module, "ckpt/model.pt")
