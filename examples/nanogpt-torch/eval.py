"""Fixed evaluation for the nanogpt-torch example: prints `val_bpb: X`.

Loads the TorchScript checkpoint that train.py exported (no model code is
imported, so nothing the researcher writes takes part in the metric), checks
that the model is causal, and scores every byte of the fixed validation split
at a fixed context length. val_bpb is the mean negative log2-likelihood per
byte; tokens are bytes, so no tokenizer conversion is involved.
"""
import math
import os
import sys
import time

# Idle OpenMP threads sleep instead of spinning, as in train.py.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn.functional as F

from prepare import CONTEXT_LEN, EVAL_BATCH, VAL_PATH, VOCAB_SIZE, load_split

CKPT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ckpt", "model.pt")
CAUSALITY_SPLITS = (1, CONTEXT_LEN // 2, CONTEXT_LEN - 1)
CAUSALITY_ATOL = 1e-4


def fail(message):
    print(f"eval error: {message}", file=sys.stderr)
    sys.exit(1)


def windows(val):
    """Splits val into EVAL_BATCH-sized batches of (input, target, weight).

    Windows overlap by one byte, so every byte after the first is a target
    exactly once. The last batch is padded to the full shape, with weight 0
    on padding, because a traced model may only accept the shape it was
    traced with.
    """
    data = torch.frombuffer(bytearray(val), dtype=torch.uint8).long()
    starts = list(range(0, len(data) - 1, CONTEXT_LEN))
    for b in range(0, len(starts), EVAL_BATCH):
        x = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
        y = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
        w = torch.zeros(EVAL_BATCH, CONTEXT_LEN)
        for row, start in enumerate(starts[b : b + EVAL_BATCH]):
            n = min(CONTEXT_LEN, len(data) - 1 - start)
            x[row, :n] = data[start : start + n]
            y[row, :n] = data[start + 1 : start + 1 + n]
            w[row, :n] = 1.0
        yield x, y, w


def logits_of(model, x, device):
    out = model(x.to(device))
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (EVAL_BATCH, CONTEXT_LEN, VOCAB_SIZE):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        fail(f"model output is {shape}, want logits of shape {(EVAL_BATCH, CONTEXT_LEN, VOCAB_SIZE)}")
    return out.float()


def check_causal(model, x, device):
    """Fails when a position's logits depend on later bytes, which would let
    the model read the byte it is asked to predict."""
    base = logits_of(model, x, device)
    gen = torch.Generator().manual_seed(0)
    for split in CAUSALITY_SPLITS:
        changed = x.clone()
        changed[:, split:] = torch.randint(VOCAB_SIZE, changed[:, split:].shape, generator=gen)
        diff = (logits_of(model, changed, device)[:, :split] - base[:, :split]).abs().max().item()
        if not diff <= CAUSALITY_ATOL:
            fail(f"model is not causal: logits before position {split} change by {diff:.3g} when later bytes change")


def evaluate(model, val, device):
    total_nats, total_bytes = 0.0, 0.0
    for i, (x, y, w) in enumerate(windows(val)):
        if i == 0:
            check_causal(model, x, device)
        logits = logits_of(model, x, device)
        nll = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), y.to(device).reshape(-1), reduction="none")
        total_nats += (nll.double().cpu() * w.reshape(-1).double()).sum().item()
        total_bytes += w.sum().item()
    return total_nats / total_bytes / math.log(2)


def main():
    start = time.time()
    if not os.path.exists(CKPT_PATH):
        fail(f"no checkpoint at {CKPT_PATH}: train.py must export a TorchScript module there")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(2)
    try:
        model = torch.jit.load(CKPT_PATH, map_location=device).eval()
    except Exception as exc:
        fail(f"cannot load {CKPT_PATH} as TorchScript: {exc}")
    val = load_split(VAL_PATH)
    with torch.no_grad():
        try:
            bpb = evaluate(model, val, device)
        except RuntimeError as exc:
            if device == "cpu":
                fail(f"model failed on the validation data: {exc}")
            # A trace can pin tensors it creates to the training device.
            print(f"evaluation on {device} failed ({str(exc).splitlines()[0]}); retrying on cpu", file=sys.stderr)
            device = "cpu"
            model = torch.jit.load(CKPT_PATH, map_location=device).eval()
            bpb = evaluate(model, val, device)
    if not math.isfinite(bpb):
        fail(f"val_bpb is {bpb}")
    print(f"eval_seconds: {time.time() - start:.1f}")
    print(f"val_bpb: {bpb:.6f}")


if __name__ == "__main__":
    main()
