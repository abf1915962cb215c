"""The Slack bot in Socket Mode (`worthit slack-bot`): a client of worthit's public API, never of its database."""
