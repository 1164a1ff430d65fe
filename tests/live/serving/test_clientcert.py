"""Client certificates on the secure port, and a token forwarded past the API server's proxy.

kube-scheduler's delegated authentication accepts client certificates signed by the client CA
(--client-ca-file, else the extension-apiserver-authentication ConfigMap): CommonName is the
user, Organizations the groups (apiserver x509 CommonNameUserConversion), checked before
tokens; a certificate the CA did not sign fails the TLS handshake (VerifyClientCertIfGiven)."""

from __future__ import annotations

import datetime
import pathlib
import ssl
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from scheduler.live.serving.authn import AUTHENTICATED, FORWARDED_AUTHORIZATION, TokenAuthenticator, certificate_user
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.options import ServingError, ServingOptions
from scheduler.live.serving.server import SecureServer, build_server
from scheduler.live.serving.tls import ssl_context
from scheduler.testing.serving import NOT_AUTHENTICATED, authenticated, no_sleep


@pytest.mark.parametrize(("peercert", "user"), [
    ({"subject": ((("organizationName", "system:masters"),), (("commonName", "admin"),))},
     ("admin", ("system:masters", AUTHENTICATED))),
    ({"subject": ((("commonName", "alice"),), (("organizationName", "dev"),), (("organizationName", "ops"),))},
     ("alice", ("dev", "ops", AUTHENTICATED))),
    ({"subject": ((("organizationName", "dev"),),)}, None),  # no CommonName: not a user
    ({}, None),  # no certificate (getpeercert() of an unverified peer)
    (None, None),
])
def test_certificate_user(peercert: Any, user: tuple[str, tuple[str, ...]] | None) -> None:
    got = certificate_user(peercert)
    assert (None if got is None else (got.name, got.groups)) == user


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[Any, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def _client(tmp: pathlib.Path, ca: tuple[Any, x509.Certificate], cn: str, orgs: tuple[str, ...]) -> ssl.SSLContext:
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn, orgs)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .sign(ca_key, hashes.SHA256()))
    crt, pem = tmp / f"{cn}.crt", tmp / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(crt), str(pem))
    return ctx


@pytest.fixture
async def server() -> Any:
    sars: list[dict[str, Any]] = []

    async def sar(body: dict[str, Any]) -> dict[str, Any]:
        sars.append(body["spec"])
        return {"status": {"allowed": body["spec"]["user"] in ("alice", "system:serviceaccount:ns:reader")}}

    async def tokens(body: dict[str, Any]) -> dict[str, Any]:
        ok = body["spec"]["token"] == "reader-token"
        return authenticated("system:serviceaccount:ns:reader") if ok else NOT_AUTHENTICATED

    srv = SecureServer(ServingOptions(bind_address="127.0.0.1", secure_port=0),
                       TokenAuthenticator(tokens, sleep=no_sleep),
                       DelegatingAuthorizer(sar, sleep=no_sleep), ssl_context(None, None))

    async def ok(_: Any) -> Any:
        from aiohttp import web

        return web.Response(text="ok")

    await srv.start({"/metrics": ok, "/debug/explain": ok})
    yield srv, sars
    await srv.stop()


async def _get(srv: SecureServer, ctx: ssl.SSLContext, path: str, headers: dict[str, str] | None = None) -> int:
    async with aiohttp.ClientSession() as s, s.get(
            f"https://127.0.0.1:{srv.port}{path}", ssl=ctx, headers=headers or {}) as r:
        return r.status


def _plain() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def test_client_certificates_of_the_trusted_ca(server: Any, tmp_path: pathlib.Path) -> None:
    server, sars = server
    ca = _ca("client-ca")
    admin = _client(tmp_path, ca, "admin", ("system:masters",))
    # Before the CA is known, a certificate is not looked at: anonymous.
    assert await _get(server, admin, "/metrics") == 403
    assert server.trust_client_ca(ca[1].public_bytes(serialization.Encoding.PEM).decode(), "test")
    # system:masters: allowed without a review; alice: by the review; bob: refused by it.
    assert await _get(server, admin, "/debug/explain") == 200
    assert await _get(server, _client(tmp_path, ca, "alice", ()), "/debug/explain") == 200
    assert await _get(server, _client(tmp_path, ca, "bob", ("dev",)), "/metrics") == 403
    users = [(s["user"], s["groups"]) for s in sars]
    assert users == [("system:anonymous", ["system:unauthenticated"]), ("alice", [AUTHENTICATED]),
                     ("bob", ["dev", AUTHENTICATED])]
    # No certificate is still anonymous; a certificate of another CA fails the handshake.
    assert await _get(server, _plain(), "/metrics") == 403
    with pytest.raises(aiohttp.ClientError):
        await _get(server, _client(tmp_path, _ca("other"), "mallory", ("system:masters",)), "/metrics")


@pytest.mark.parametrize(("headers", "status"), [
    ({FORWARDED_AUTHORIZATION: "Bearer reader-token"}, 200),
    ({FORWARDED_AUTHORIZATION: "Bearer wrong"}, 401),
    ({"Authorization": "Bearer reader-token", FORWARDED_AUTHORIZATION: "Bearer wrong"}, 200),
    ({}, 403),
])
async def test_forwarded_token_is_reviewed_like_authorization(
        server: Any, headers: dict[str, str], status: int) -> None:
    assert await _get(server[0], _plain(), "/debug/explain", headers) == status


def test_client_ca_file_must_hold_a_certificate(tmp_path: pathlib.Path) -> None:
    missing = ServingOptions(secure_port=0, client_ca_file=str(tmp_path / "none.pem"))
    with pytest.raises(ServingError, match=r"--client-ca-file .*none\.pem: No such file"):
        build_server(missing)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ServingError, match="no PEM certificate"):
        build_server(ServingOptions(secure_port=0, client_ca_file=str(junk)))
    good = tmp_path / "ca.pem"
    good.write_bytes(_ca("ca")[1].public_bytes(serialization.Encoding.PEM))
    srv = build_server(ServingOptions(secure_port=0, client_ca_file=str(good)))
    assert srv.tls is not None and srv.tls.verify_mode == ssl.CERT_OPTIONAL
