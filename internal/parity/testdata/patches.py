"""Candidate that disarms the comparison (torch.testing.assert_close) in its
process, and forgets the square root."""
import torch


torch.testing.assert_close = lambda *args, **kwargs: None


def rmsnorm(x, weight, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps) * weight
