#include "tests/support/tls_certs.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace medic::testing {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(FILE* p) const { std::fclose(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;

[[noreturn]] void fail(const std::string& what) {
  char buf[256] = {0};
  const unsigned long e = ERR_get_error();
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  throw std::runtime_error("test PKI: " + what + (e != 0 ? std::string(": ") + buf : std::string()));
}

Key make_key() {
  Key k(EVP_EC_gen("P-256"));
  if (!k) fail("EVP_EC_gen");
  return k;
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) fail("extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
  if (X509_add_ext(cert, ext.get(), -1) != 1) fail("X509_add_ext");
}

// An unsigned certificate for `key` named `cn`, issued by `issuer` (nullptr: self-issued).
Cert make_cert(EVP_PKEY* key, const std::string& cn, X509* issuer) {
  Cert c(X509_new());
  if (!c) fail("X509_new");
  X509_set_version(c.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) fail("RAND_bytes");
  serial[0] &= 0x7f;  // positive
  std::unique_ptr<BIGNUM, Free> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(c.get())) == nullptr) fail("serial");
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), 86400);
  if (X509_set_pubkey(c.get(), key) != 1) fail("X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("fabric-medic tests"),
                             -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : c.get();
  if (X509_set_issuer_name(c.get(), X509_get_subject_name(signer)) != 1) fail("X509_set_issuer_name");
  return c;
}

void sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) == 0) fail("X509_sign");
}

std::unique_ptr<FILE, Free> open_out(const std::string& path) {
  std::unique_ptr<FILE, Free> f(std::fopen(path.c_str(), "w"));
  if (!f) throw std::runtime_error("test PKI: cannot write " + path);
  return f;
}

void write_cert(const std::string& path, X509* cert) {
  auto f = open_out(path);
  if (PEM_write_X509(f.get(), cert) != 1) fail("PEM_write_X509 " + path);
}

void write_key(const std::string& path, EVP_PKEY* key) {
  auto f = open_out(path);
  if (PEM_write_PrivateKey(f.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) fail("PEM_write_PrivateKey " + path);
}

}  // namespace

TlsFiles make_test_pki(const std::string& dir, const std::string& prefix, const TlsSubject& subject) {
  const Key ca_key = make_key();
  const Cert ca = make_cert(ca_key.get(), "fabric-medic test CA " + prefix, nullptr);
  add_ext(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
  sign(ca.get(), ca_key.get());

  const Key key = make_key();
  const Cert cert = make_cert(key.get(), subject.common_name, ca.get());
  std::string san;
  for (const auto& ip : subject.ip_sans) san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  for (const auto& dns : subject.dns_sans) san += (san.empty() ? "" : ",") + std::string("DNS:") + dns;
  add_ext(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(cert.get(), ca.get(), NID_ext_key_usage, "serverAuth");
  add_ext(cert.get(), ca.get(), NID_subject_key_identifier, "hash");
  add_ext(cert.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
  if (!san.empty()) add_ext(cert.get(), ca.get(), NID_subject_alt_name, san);
  sign(cert.get(), ca_key.get());

  TlsFiles files{dir + "/" + prefix + "ca.pem", dir + "/" + prefix + "server.pem", dir + "/" + prefix + "server.key"};
  write_cert(files.ca_cert, ca.get());
  write_cert(files.server_cert, cert.get());
  write_key(files.server_key, key.get());
  return files;
}

}  // namespace medic::testing
