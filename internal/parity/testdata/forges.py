"""Candidate that prints the verdict it wants while being imported, and ends
the process before any check could fail it."""
import os
import sys

sys.stdout.write("PARITY_OK target=rmsnorm\n")
sys.stdout.flush()
os._exit(0)
