"""tasks/ holds Harbor task folders (fixtures), not tests: their Python files run inside task containers."""

collect_ignore = ["tasks"]
