"""Files that travel in every code task exported as a Harbor folder (:mod:`~agentgym.envs.terminal.export`):
its tests' check and the submission's side of their relay, run by ``python3`` inside the task's container."""
