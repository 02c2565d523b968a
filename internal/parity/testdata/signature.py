"""Candidate whose signature differs from the baseline's."""
import torch


def rmsnorm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
