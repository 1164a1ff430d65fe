"""Where a running scheduler serves, published for ``pyscheduler explain`` on the same machine.

A scheduler started as a local process (``make run``, a developer's shell) is no pod: nothing in
the cluster says where to reach it. So each ``pyscheduler run`` with secure serving writes one
small JSON file while it runs: its pid, the address and port it serves on, the SHA-256 of its
serving certificate (the client pins it: the certificate is self-signed), the API server it
works for, its profiles, its leader-election identity and Lease. The file is removed when the
process stops; a file whose pid no longer runs is ignored (and removed) by readers.

The directory: ``$PYSCHEDULER_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/pyscheduler``, else
``<tmp>/pyscheduler-<uid>``; created with mode 0700, files 0600, so only the same user sees them.
With leader election on, ``explain`` reads the Lease's holder identity and picks the file with
that identity; without it, the files of processes working for the same API server whose
profiles include the pod's scheduler name.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import ssl
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RUNTIME_ENV = "PYSCHEDULER_RUNTIME_DIR"


def runtime_dir() -> Path:
    d = os.environ.get(RUNTIME_ENV)
    if d:
        return Path(d)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "pyscheduler"
    return Path(tempfile.gettempdir()) / f"pyscheduler-{os.getuid()}"


@dataclass(slots=True)
class Presence:
    pid: int
    identity: str
    host: str  # where a local client connects (the bind address, loopback for a wildcard)
    port: int
    fingerprint: str  # SHA-256 of the serving certificate (DER), hex
    server: str  # the API server the scheduler works for
    profiles: list[str] = field(default_factory=list)
    lease: str = ""  # "namespace/name" when leader election is on
    started: float = 0.0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"


def local_host(bind_address: str) -> str:
    """The address a client on this machine uses for a server bound to ``bind_address``."""
    if bind_address in ("0.0.0.0", ""):
        return "127.0.0.1"
    if bind_address == "::":
        return "::1"
    return bind_address


async def certificate_fingerprint(host: str, port: int, timeout: float = 5.0) -> str:
    """The SHA-256 (hex) of the certificate the server at host:port presents."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ctx), timeout)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    return hashlib.sha256(der).hexdigest()


def publish(p: Presence, directory: Path | None = None) -> Path:
    """Write ``p`` atomically; OSError if the directory cannot be made or written."""
    d = directory or runtime_dir()
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = d / f"{p.pid}.json"
    tmp = d / f".{p.pid}.json.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(p), f)
    os.replace(tmp, path)
    return path


def withdraw(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def read_all(directory: Path | None = None) -> list[Presence]:
    """The published schedulers whose process still runs, newest first; stale files removed."""
    d = directory or runtime_dir()
    out: list[Presence] = []
    try:
        files = sorted(d.glob("*.json"))
    except OSError:
        return out
    for path in files:
        try:
            doc: Any = json.loads(path.read_text(encoding="utf-8"))
            p = Presence(**{k: doc[k] for k in Presence.__dataclass_fields__ if k in doc})
        except (OSError, ValueError, TypeError):
            continue
        if not alive(int(p.pid)):
            withdraw(path)
            continue
        out.append(p)
    out.sort(key=lambda p: -p.started)
    return out

