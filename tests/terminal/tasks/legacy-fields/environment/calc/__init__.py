"""A small package with one bug, for the legacy-fields fixture."""
