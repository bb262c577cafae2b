// API tokens: random secrets handed out once, kept only as a salted hash; and the HMAC
// signature of a webhook's body.
//
// A token reads "mdk_ID_SECRET": the user's id, so that the one hash to check can be found
// without trying every user's, and 32 random bytes as 43 base64url characters. What is
// stored is a 16-byte random salt and SHA-256(salt || SECRET); checking compares in time
// that does not depend on where the bytes differ.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace medic {

struct TokenParts {
  int64_t id = 0;
  std::string secret;
};

// A fresh secret and salt (from the OS's random source).
std::string random_secret();
std::string random_salt();
std::string token_of(int64_t id, const std::string& secret);
// nullopt when `token` is not of the form above.
std::optional<TokenParts> parse_token(std::string_view token);
// SHA-256(salt || secret), 32 bytes.
std::string token_hash(const std::string& salt, const std::string& secret);
bool same_bytes(std::string_view a, std::string_view b);

// A webhook's signature: "sha256=" and HMAC-SHA256(secret, body) in lowercase hex, as the
// X-Medic-Signature header carries it.
std::string hmac_sha256_signature(std::string_view secret, std::string_view body);

}  // namespace medic
