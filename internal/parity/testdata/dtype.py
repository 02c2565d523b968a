"""Candidate that returns float64."""
import torch


def rmsnorm(x, weight, eps=1e-6):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.double()
