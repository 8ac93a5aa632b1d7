"""Looking at runs: an HTML report with plots and paired comparisons, and exports to datasets.

``agentgym view RUN [RUN ...] --out report.html`` writes one self-contained page (no network needed
to open it); ``agentgym export RUN --to datasets DIR`` writes a Hugging Face dataset. The pieces:

- :mod:`~agentgym.view.runs` reads runs (a JSONL file or a folder of them);
- :mod:`~agentgym.view.pairing` chooses which runs to compare (runs of one env, with ``--baseline``);
- :mod:`~agentgym.view.stats` compares runs on their shared episodes (McNemar, paired permutation);
- :mod:`~agentgym.view.plots` chooses and makes the figures (plotly JSON, drawn by the page);
- :mod:`~agentgym.view.report` assembles the page; :mod:`~agentgym.view.serve` serves it locally,
  rebuilt as its runs grow;
- :mod:`~agentgym.view.export` converts trajectories to and from ``datasets`` and parquet.

Plotly, numpy and datasets are imported only by the modules that need them.
"""

from agentgym.view.runs import Run, load_runs
from agentgym.view.stats import Comparison, McNemar, PairedTest, compare, mcnemar, paired_permutation

__all__ = ["Comparison", "McNemar", "PairedTest", "Run", "compare", "load_runs", "mcnemar", "paired_permutation"]
