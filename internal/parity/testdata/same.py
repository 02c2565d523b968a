"""Candidate that matches the baseline within tolerance."""
import torch


def rmsnorm(x, weight, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
