"""Candidate that writes the verdict it wants into its checker's output
through /proc, then kills the checker, and forgets the square root."""
import os
import signal

try:
    with open(f"/proc/{os.getppid()}/fd/1", "w") as out:
        out.write("PARITY_OK target=rmsnorm\n")
except OSError:
    pass
os.kill(os.getppid(), signal.SIGKILL)


def rmsnorm(x, weight, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps) * weight
