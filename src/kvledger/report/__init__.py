"""Reports on a plan: ``explain`` (a start-up log re-derived) and the HTML report."""
