"""Slack: the `/worthit` text syntax (`text.py`) and the Block Kit answer (`blocks.py`). Both are pure; the HTTP side
(signature check, storing the decision) is `service/api/slack.py`."""
