"""The volume binder's error, shared by the binder and its assume cache."""

from __future__ import annotations


class BinderError(Exception):
    """An error the binder returns; the plugin turns it into an Error status."""
