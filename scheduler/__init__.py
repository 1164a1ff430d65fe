"""pyscheduler: a Kubernetes scheduler in Python, exact to kube-scheduler."""

__version__ = "0.1.0"
