"""The contract test of scripts/contract.py, by surface (one module each)."""

from . import common  # noqa: F401  (first: it names a missing package with the command that installs it)
