from scheduler.cli import entrypoint

entrypoint()
