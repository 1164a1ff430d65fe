"""Kubernetes objects parsed once from the API's JSON into slotted values: pure, no I/O, no framework."""
