"""Checking live caches against declarations (needs the torch extra; imported lazily)."""
