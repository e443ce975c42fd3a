"""kvledger: every byte of attention-cache memory, declared, planned and checked."""

__version__ = "0.1.0"
