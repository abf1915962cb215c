"""Alembic migrations: the only way worthit's schema is made, on SQLite and PostgreSQL alike."""
