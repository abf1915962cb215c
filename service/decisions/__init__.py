"""Decisions: evaluating proposals with the engine and storing them (`service`), and the documents (`schemas`)."""
