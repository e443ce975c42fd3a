"""pytest plugin entry point (registered in pyproject); fixtures land with the check/ work."""
