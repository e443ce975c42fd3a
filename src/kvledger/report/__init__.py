"""Reports for people: the self-contained HTML report (``html``) and its data (``series``)."""
