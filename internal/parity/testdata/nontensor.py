"""Candidate that returns a list."""


def rmsnorm(x, weight, eps=1e-6):
    return x.tolist()
