"""Watching the API server: the reflector (the only kopf user), byte-level list/watch decoding, the
informer store."""
