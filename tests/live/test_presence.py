"""Presence files: where a local scheduler serves, for `explain` on the same machine."""

from __future__ import annotations

import asyncio
import hashlib
import os
import pathlib
import ssl
import subprocess
import sys

import pytest

from scheduler.live import presence
from scheduler.live.serving.authn import TokenAuthenticator
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.options import ServingOptions
from scheduler.live.serving.server import SecureServer
from scheduler.live.serving.tls import ssl_context


def _p(pid: int, **kw: object) -> presence.Presence:
    base: dict[str, object] = {"pid": pid, "identity": f"host_{pid}", "host": "127.0.0.1", "port": 10259,
                               "fingerprint": "ab", "server": "https://127.0.0.1:6443", "started": float(pid)}
    base.update(kw)
    return presence.Presence(**base)  # type: ignore[arg-type]


def test_publish_read_withdraw(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "rt"
    path = presence.publish(_p(os.getpid(), profiles=["pyscheduler"]), d)
    assert (d.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)
    (got,) = presence.read_all(d)
    assert (got.pid, got.profiles, got.url) == (os.getpid(), ["pyscheduler"], "https://127.0.0.1:10259")
    presence.withdraw(path)
    assert presence.read_all(d) == []


def test_files_of_gone_processes_are_ignored_and_removed(tmp_path: pathlib.Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    presence.publish(_p(dead), tmp_path)
    presence.publish(_p(os.getpid()), tmp_path)
    (tmp_path / "junk.json").write_text("{not json")
    assert [p.pid for p in presence.read_all(tmp_path)] == [os.getpid()]
    assert not (tmp_path / f"{dead}.json").exists()


@pytest.mark.parametrize(("env", "expected"), [
    ({"PYSCHEDULER_RUNTIME_DIR": "/x/y"}, "/x/y"),
    ({"XDG_RUNTIME_DIR": "/run/user/7"}, "/run/user/7/pyscheduler"),
    ({}, None),
])
def test_runtime_dir(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str | None) -> None:
    for k in ("PYSCHEDULER_RUNTIME_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    got = str(presence.runtime_dir())
    assert got == expected if expected else got.endswith(f"pyscheduler-{os.getuid()}")


@pytest.mark.parametrize(("bind", "host"), [("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("10.1.2.3", "10.1.2.3")])
def test_local_host(bind: str, host: str) -> None:
    assert presence.local_host(bind) == host
    assert presence.Presence(1, "i", host, 9, "f", "s").url == (f"https://[{host}]:9" if ":" in host
                                                                 else f"https://{host}:9")


async def test_fingerprint_is_the_served_certificates() -> None:
    srv = SecureServer(ServingOptions(bind_address="127.0.0.1", secure_port=0), TokenAuthenticator(None),
                       DelegatingAuthorizer(None), ssl_context(None, None))
    await srv.start({})
    try:
        got = await presence.certificate_fingerprint("127.0.0.1", srv.port)
        # Blocking: from a thread, while the loop serves.
        der = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", srv.port))
        assert got == hashlib.sha256(ssl.PEM_cert_to_DER_cert(der)).hexdigest()
    finally:
        await srv.stop()
