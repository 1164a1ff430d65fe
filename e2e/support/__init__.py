"""Helpers of the e2e suite, one module per concern: plane, waits, objects, apply, auth."""
