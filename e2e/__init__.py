"""End-to-end suite against a real kube-apiserver (pytest e2e/), its helpers and the differential runs."""
