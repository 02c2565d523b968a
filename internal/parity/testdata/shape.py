"""Candidate that drops the last dimension."""


def rmsnorm(x, weight, eps=1e-6):
    return x.pow(2).mean(-1)
