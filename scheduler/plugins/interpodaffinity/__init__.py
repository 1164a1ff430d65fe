"""InterPodAffinity plugin package."""

from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
