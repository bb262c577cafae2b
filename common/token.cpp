#include "common/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <stdexcept>

namespace medic {

namespace {

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("the system's random source failed");
  }
  return out;
}

std::string base64url(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

bool secret_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

std::string random_secret() { return base64url(random_bytes(32)); }
std::string random_salt() { return random_bytes(16); }

std::string token_of(int64_t id, const std::string& secret) { return "mdk_" + std::to_string(id) + "_" + secret; }

std::optional<TokenParts> parse_token(std::string_view token) {
  if (token.size() > 200 || token.rfind("mdk_", 0) != 0) return std::nullopt;
  const std::string_view rest = token.substr(4);
  const size_t us = rest.find('_');
  if (us == std::string_view::npos || us == 0) return std::nullopt;
  TokenParts p;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + us, p.id);
  if (ec != std::errc() || ptr != rest.data() + us || p.id <= 0) return std::nullopt;
  p.secret = std::string(rest.substr(us + 1));
  if (p.secret.size() < 16) return std::nullopt;
  for (const char c : p.secret) {
    if (!secret_char(c)) return std::nullopt;
  }
  return p;
}

std::string token_hash(const std::string& salt, const std::string& secret) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, salt.data(), salt.size()) == 1 &&
                  EVP_DigestUpdate(ctx, secret.data(), secret.size()) == 1 && EVP_DigestFinal_ex(ctx, md, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("SHA-256 failed");
  return std::string(reinterpret_cast<const char*>(md), len);
}

bool same_bytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string hmac_sha256_signature(std::string_view secret, std::string_view body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len) == nullptr) {
    len = 0;  // no signature: a receiver that checks refuses it, as it should
  }
  static const char* kHex = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

}  // namespace medic
