"""Start-up measures that must run before the heavy imports (standard library only)."""
