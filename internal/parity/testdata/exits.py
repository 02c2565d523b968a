"""Candidate that ends the process while being imported."""
import os

os._exit(0)
