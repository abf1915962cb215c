"""Tokens: bearer tokens, their scopes and digests (`model`); stored by service/db/tokens.py."""
