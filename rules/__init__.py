"""worthit's rule engine: Amdahl's law and scope checks under a versioned policy.

Pure: nothing here does I/O beyond parsing the bytes it is handed, and nothing here imports
the service layer, a web framework or a database driver (a test enforces it).
"""
