"""Helpers for check_sorted.py: a second file in tests/, imported from /tests."""


def read_lines(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f]
    except OSError:
        return None


def same_lines(expected, actual):
    return expected is not None and actual == expected
