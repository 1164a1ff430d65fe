"""The async edge: everything that awaits, runs threads or talks to the API server (process wiring,
the loop, event handlers, watch, API writers, serving)."""
