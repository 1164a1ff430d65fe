"""Print (or return) a free TCP port on 127.0.0.1 for a control-plane component.

Chosen below the kernel's ephemeral range: a port from that range can be taken as the source
port of any outgoing connection while its server is down for a restart (the e2e suite restarts
kube-apiserver), and the restarted server then fails with "address already in use".
Standard library only: up.sh runs it before any Python package is installed.
"""

from __future__ import annotations

import random
import socket

LOWEST = 10000


def ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    high = ephemeral_low() - 1
    if high > LOWEST:
        for _ in range(500):
            port = random.randint(LOWEST, high)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:  # no room below the ephemeral range: any free port
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    print(free_port())
