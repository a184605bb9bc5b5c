"""The local CA: certificates that verify against it for the names they were issued for, reused
across runs, and the command that makes compose's certificates."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509

from duelmahjong.platform import pki
from duelmahjong.platform.tls import TlsError, load_pair, subject_names


def test_a_leaf_names_its_hosts_is_a_pair_and_its_key_is_private(tmp_path: Path) -> None:
    authority = pki.LocalAuthority.open(tmp_path / "ca")
    leaf = authority.issue("wallet", ["wallet", "127.0.0.1"], directory=tmp_path / "wallet")
    chain, _key = load_pair(leaf.cert, leaf.key)
    assert subject_names(chain) == ("wallet", "127.0.0.1")
    assert stat.S_IMODE(leaf.key.stat().st_mode) == 0o600
    # the chain verifies against the CA (ssl loads it as a client would)
    context = ssl.create_default_context(cafile=str(authority.ca_cert))
    context.load_cert_chain(leaf.cert, leaf.key)
    other = authority.issue("other", ["other"], directory=tmp_path / "other")
    with pytest.raises(TlsError, match="is not the key of the certificate"):
        load_pair(leaf.cert, other.key)


def test_the_command_issues_each_named_certificate_for_its_names_and_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pki.main([str(tmp_path), "wallet", "table=table,table-0", "--readable"]) == 0
    table = x509.load_pem_x509_certificate((tmp_path / "table.pem").read_bytes())
    names = table.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["table", "table-0", "localhost"]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert stat.S_IMODE((tmp_path / "wallet-key.pem").stat().st_mode) == 0o644  # --readable
    assert stat.S_IMODE((tmp_path / "ca-key.pem").stat().st_mode) == 0o600  # never the CA's
    assert f"CA: {tmp_path / 'ca.pem'}" in capsys.readouterr().out
    ca = (tmp_path / "ca.pem").read_bytes()
    pki.main([str(tmp_path), "scoring"])
    assert (tmp_path / "ca.pem").read_bytes() == ca  # the CA is reused: clients keep trusting it
