"""The offline driver: the decision core with no edge, cluster manifests in, explained decisions out."""
