"""worthit's version, in one place: pyproject.toml reads it (`dynamic`), `worthit --version` and the API print it."""

VERSION = "0.1.0"
