"""Exit 0 when the file the agent wrote holds the expected lines, in order."""
import sys

from compare import read_lines, same_lines  # beside this file: python puts /tests on sys.path

expected, actual = sys.argv[1], sys.argv[2]
sys.exit(0 if same_lines(read_lines(expected), read_lines(actual)) else 1)
