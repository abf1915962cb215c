"""HTTP controllers, one module per feature. Thin: parse, call a service, return."""
