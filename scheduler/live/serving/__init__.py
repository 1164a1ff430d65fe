"""Secure serving of health and metrics as kube-scheduler does: options and flags, delegated
authentication and authorization, TLS."""
