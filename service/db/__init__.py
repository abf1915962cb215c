"""Persistence: models (the schema Alembic migrates), the engine, the group-commit writer, repositories."""
