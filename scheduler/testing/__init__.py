"""Builders and fakes shared by tests/, e2e/ and bench/ (upstream: pkg/scheduler/testing)."""
