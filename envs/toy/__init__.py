"""A toy environment for training-loop tests: learnable in seconds by a tiny model on a CPU."""
