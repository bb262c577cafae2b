// Throwaway TLS material for tests, made with OpenSSL's C API (no openssl binary needed):
// a private CA and a server certificate it signed, written as PEM files.
#pragma once

#include <string>
#include <vector>

namespace medic::testing {

struct TlsFiles {
  std::string ca_cert;      // the CA's certificate: what a client trusts (--driver-ca, ca_file)
  std::string server_cert;  // the server's certificate (--tls-cert)
  std::string server_key;   // its private key, unencrypted (--tls-key)
};

struct TlsSubject {
  std::vector<std::string> ip_sans = {"127.0.0.1"};
  std::vector<std::string> dns_sans = {"localhost"};
  std::string common_name = "127.0.0.1";
};

// Makes a fresh CA (EC P-256, valid from an hour ago for a day) and a server certificate
// for `subject` signed by it, and writes PREFIXca.pem, PREFIXserver.pem and
// PREFIXserver.key into `dir`. Throws std::runtime_error when OpenSSL fails.
TlsFiles make_test_pki(const std::string& dir, const std::string& prefix = "",
                       const TlsSubject& subject = {});

}  // namespace medic::testing
