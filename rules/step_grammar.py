"""The step-range grammar's schema form (`2:5`, `3`, `2:`, `:5`, `all`): what the boundaries validate before parsing.

A leaf shared by the proposal's `steps` field (rules/model.py), the upload's query parameter and the OpenAPI file;
the parser that reads the grammar is the Kineto reader's `parse_steps` (rules/profiles/kineto/steps.py).
"""

from __future__ import annotations

__all__ = ["STEPS_MAX_LENGTH", "STEPS_PATTERN"]

#: `parse_steps`' grammar as a JSON-schema pattern, numbers bounded to 19 digits so that a step number fits an int64.
#: Coarser than the parser (it lets ``:`` through, which `parse_steps` refuses with a sentence saying why).
STEPS_PATTERN = r"^\s*(all|\d{0,19}\s*(:\s*\d{0,19}\s*)?)$"
STEPS_MAX_LENGTH = 41
