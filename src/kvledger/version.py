"""kvledger's version: a leaf, so a module deep in the tree (the Hub's user agent, the
report's footer) can name it without importing the top level, which names the planner."""

__version__ = "0.1.0"
