"""TLS for the serving endpoints: --tls-cert-file/--tls-private-key-file, else a self-signed pair
made at start (a CA "localhost-ca@<unix>" and a serving cert "localhost@<unix>" for localhost and
127.0.0.1, as SecureServingOptions.MaybeDefaultWithSelfSignedCerts with an empty cert
directory). TLS 1.2 or newer.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import tempfile
from collections.abc import Sequence

from scheduler.live.serving.options import ServingError


def self_signed_pair(host: str = "localhost", ips: Sequence[str] = ("127.0.0.1",)) -> tuple[bytes, bytes]:
    """PEM (certificate chain, private key): a fresh CA and a serving certificate it signed, one year.

    ECDSA P-256 keys: kube-scheduler's pair is RSA 2048, but two RSA key generations cost 0.1 to
    0.5 s of start-up here against well under a millisecond, and any TLS client accepts either."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp())
    until = now + datetime.timedelta(days=365)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"{host}-ca@{stamp}")

    def signed_by_ca(subject: x509.Name, public_key: ec.EllipticCurvePublicKey, is_ca: bool) -> x509.CertificateBuilder:
        # What the CA and the serving certificate share: issuer, validity, and key usage
        # (digital signature; certificate signing for the CA alone).
        return (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(ca_name).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=is_ca,
                                         content_commitment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        )

    ca = signed_by_ca(ca_name, ca_key.public_key(), True).sign(ca_key, hashes.SHA256())
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    try:
        sans.insert(0, x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        sans.insert(0, x509.DNSName(host))
    cert = (
        signed_by_ca(name(f"{host}@{stamp}"), key.public_key(), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return chain, key_pem


def ssl_context(cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ServingError(f"cannot load --tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                               f"{getattr(exc, 'strerror', None) or exc}") from None
        return ctx
    chain, key = self_signed_pair()
    # The ssl module loads key material from files only: write them to a private directory
    # (the Deployment mounts an emptyDir on /tmp) and remove it once loaded.
    tmp = tempfile.mkdtemp(prefix="pyscheduler-serving-")
    try:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in ((cert_path, chain), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        ctx.load_cert_chain(cert_path, key_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ctx
