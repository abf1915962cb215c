"""Outcomes: what was measured after the work, calibration and workload history (`service`, `schemas`)."""
