"""Every request the kubernetes client sends: credentials and clients, transport and rate limits,
the lease fence, bindings, events, volume writes, preemption, leader election."""
