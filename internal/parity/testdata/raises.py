"""Candidate that raises when called."""


def rmsnorm(x, weight, eps=1e-6):
    raise RuntimeError("fused kernel unavailable")
