"""Candidate that forgets the square root."""


def rmsnorm(x, weight, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps) * weight
