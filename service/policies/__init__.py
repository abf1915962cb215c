"""Policies: the bundled and stored versions, cached (`service`), and their summaries (`schemas`)."""
