"""The example plugins of docs/plugins.md: one small module per extension point.

Each module is complete and runs as shown in the guide; tests/examples run every example
through ``simulate`` and check the output the guide prints.
"""
