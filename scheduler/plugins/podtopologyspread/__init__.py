"""PodTopologySpread plugin package."""

from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
