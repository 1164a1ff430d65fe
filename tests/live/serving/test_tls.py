"""Serving TLS material: the self-signed pair kube-scheduler makes at start, and key files."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from scheduler.live.serving.options import ServingError
from scheduler.live.serving.tls import self_signed_pair, ssl_context


def test_self_signed_pair_like_kube_scheduler() -> None:
    chain, key = self_signed_pair()
    certs = x509.load_pem_x509_certificates(chain)
    assert len(certs) == 2
    leaf, ca = certs
    assert leaf.subject.rfc4514_string().startswith("CN=localhost@")
    assert ca.subject.rfc4514_string().startswith("CN=localhost-ca@")
    assert leaf.issuer == ca.subject
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert b"PRIVATE KEY" in key
    # The leaf is signed by the CA and its key is the one returned (ECDSA, not kube-scheduler's
    # RSA: see self_signed_pair).
    priv = serialization.load_pem_private_key(key, password=None)
    assert isinstance(priv, ec.EllipticCurvePrivateKey)
    assert priv.public_key().public_numbers() == leaf.public_key().public_numbers()
    ca.public_key().verify(leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm))


def test_tls_files_errors_are_one_line(tmp_path) -> None:
    with pytest.raises(ServingError, match="cannot load --tls-cert-file"):
        ssl_context(str(tmp_path / "missing.crt"), str(tmp_path / "missing.key"))
