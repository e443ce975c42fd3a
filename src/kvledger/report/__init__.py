"""Reports on a plan: ``explain`` (a start-up log re-derived) and the self-contained HTML
report (``html``, its plots in ``charts``, its numbers in ``series``)."""
