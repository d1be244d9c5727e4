"""Creates throwaway TLS and signing material for the fake providers (tests only).

Usage: mkcerts.py OUTDIR

Writes into OUTDIR:
  ca.pem                 a self-signed test CA (what clients pass as their CA file, CURLOPT_CAINFO)
  server.pem, server.key a server certificate for 127.0.0.1 and localhost, signed by the CA
  apns_key.p8            a P-256 PKCS#8 private key, like an APNs auth key (.p8)
  apns_pub.pem           its public key (SubjectPublicKeyInfo PEM) for fake_apns.py --public-key
  sa_key.pem, sa_pub.pem an RSA-2048 key pair standing for a Google service account
  apns_other.p8          a second P-256 key no fake trusts (an app holding the wrong .p8)
  sa_other_key.pem       a second RSA-2048 key no fake trusts (a service account file with the wrong key)
  other_ca.pem           a second CA that signed nothing (a client trusting only it must refuse the fakes)
  wronghost.pem/.key     a server certificate from ca.pem for wrong.example only (host name check)
Nothing here is a real credential; everything is regenerated on each call.
"""
import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def private_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def main(out):
    os.makedirs(out, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pushfleet test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))

    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = (x509.CertificateBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
           .issuer_name(ca_name).public_key(srv_key.public_key())
           .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
           .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                          critical=False)
           .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
           .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
           .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
           .sign(ca_key, hashes.SHA256()))

    write(os.path.join(out, "ca.pem"), ca.public_bytes(serialization.Encoding.PEM))
    write(os.path.join(out, "server.pem"), srv.public_bytes(serialization.Encoding.PEM))
    write(os.path.join(out, "server.key"), private_pem(srv_key))

    apns = ec.generate_private_key(ec.SECP256R1())
    write(os.path.join(out, "apns_key.p8"), private_pem(apns))
    write(os.path.join(out, "apns_pub.pem"), public_pem(apns))

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write(os.path.join(out, "sa_key.pem"), private_pem(sa))
    write(os.path.join(out, "sa_pub.pem"), public_pem(sa))

    other_key = ec.generate_private_key(ec.SECP256R1())
    other_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pushfleet other test CA")])
    other = (x509.CertificateBuilder().subject_name(other_name).issuer_name(other_name)
             .public_key(other_key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(start).not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
             .sign(other_key, hashes.SHA256()))
    write(os.path.join(out, "other_ca.pem"), other.public_bytes(serialization.Encoding.PEM))

    wrong_key = ec.generate_private_key(ec.SECP256R1())
    wrong = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wrong.example")]))
             .issuer_name(ca_name).public_key(wrong_key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
             .add_extension(x509.SubjectAlternativeName([x509.DNSName("wrong.example")]), critical=False)
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
             .sign(ca_key, hashes.SHA256()))
    write(os.path.join(out, "wronghost.pem"), wrong.public_bytes(serialization.Encoding.PEM))
    write(os.path.join(out, "wronghost.key"), private_pem(wrong_key))

    write(os.path.join(out, "apns_other.p8"), private_pem(ec.generate_private_key(ec.SECP256R1())))
    write(os.path.join(out, "sa_other_key.pem"), private_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
