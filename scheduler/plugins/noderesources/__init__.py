"""Node resource plugins, one module each as upstream: NodeResourcesFit (fit.py) and
NodeResourcesBalancedAllocation (balanced_allocation.py), with the scoring strategies they share."""
