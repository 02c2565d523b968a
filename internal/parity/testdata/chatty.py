"""Candidate that prints more than a pipe holds before it answers."""
import sys

sys.stdout.write("x" * 200_000 + "\n")
sys.stdout.flush()


def rmsnorm(x, weight, eps=1e-6):
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
