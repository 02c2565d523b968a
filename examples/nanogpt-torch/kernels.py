"""Kernels used by train.py. Variable: the researcher may rewrite them for
speed, but each must keep the signature and output of its counterpart in
reference_kernels.py (checked by the protocol's kernelTargets)."""
import torch


def rmsnorm(x, weight, eps=1e-6):
    """RMSNorm over the last dimension: x * rsqrt(mean(x^2) + eps) * weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
