"""Policy files shipped with the engine (`default.toml`)."""
