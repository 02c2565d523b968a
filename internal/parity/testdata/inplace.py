"""Candidate that scales its input in place, then matches the baseline."""
import torch


def rmsnorm(x, weight, eps=1e-6):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    x.mul_(100)
    return y
