"""Differential suite: the same pods through the real kube-scheduler v1.36.3 and through
``python -m scheduler simulate``, decision by decision.

* :mod:`differential.generator` builds a seeded random cluster (nodes, namespaces, owners,
  bound pods) and a list of pending pods that touch every implemented plugin.
* :mod:`differential.kubescheduler` writes the binary's configuration (the same file feeds
  ``simulate``), starts and stops the binary.
* :mod:`differential.kslog` reads the binary's ``-v=10`` score lines and results.
* :mod:`differential.compare` turns one decision of each side into mismatches.
* :mod:`differential.runner` drives a seed against a live API server.

``python -m differential --seeds 1-30`` from the repository root with ``e2e`` on ``sys.path``
(``make differential``), or ``python -m e2e.differential --seeds 1-30``.
"""
