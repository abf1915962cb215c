"""Profiles: parsing uploads off the event loop, storing breakdowns, resolving proposals (`service`, `schemas`)."""
