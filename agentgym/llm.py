"""litellm, imported on first use and kept offline.

Its import takes seconds and, unless told otherwise, fetches a model price map from the internet;
every caller (policies, judges, simulated search) imports it through :func:`litellm_module` so that
``import agentgym`` stays cheap and ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is defaulted first.
"""

from __future__ import annotations

import os
from typing import Any


def litellm_module() -> Any:
    """The ``litellm`` module, with the local price map and quiet debug output."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm
