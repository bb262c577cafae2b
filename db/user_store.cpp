#include "db/user_store.h"

#include <nlohmann/json.hpp>
#include <regex>

#include "common/strings.h"
#include "common/token.h"
#include "db/internal.h"

namespace medic::db {

using namespace internal;

namespace {

bool valid_name(const std::string& name) {
  static const std::regex re("^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$");
  return std::regex_match(name, re);
}

}  // namespace

bool valid_role(const std::string& role) { return role == "viewer" || role == "operator" || role == "admin"; }

Result<std::string> UserStore::add_user(const std::string& name, const std::string& role, const Actor& by, Time at) {
  if (!valid_name(name)) {
    return Error::invalid("user name " + quote(name) +
                          ": 1 to 64 letters, digits and . _ @ -, starting with a letter or digit");
  }
  if (name == "bootstrap" || name == "medicd") {
    return Error::invalid("user name " + quote(name) + " is reserved (medicd's bootstrap token and medicd itself)");
  }
  if (!valid_role(role)) return Error::invalid("role " + quote(role) + ": expected viewer, operator or admin");
  const std::string salt = random_salt(), secret = random_secret();
  const std::string hash = token_hash(salt, secret);
  return c_.run("add_user", [&](Pq& pq) -> Result<std::string> {
    pqxx::work w(pq.c);
    const auto taken = w.exec_params("SELECT 1 FROM users WHERE name = $1", name);
    if (!taken.empty()) return Error::conflict("user " + quote(name) + " exists already");
    const auto r = w.exec_params(
        "INSERT INTO users (name, role, token_salt, token_hash, created_at, token_set_at) "
        "VALUES ($1, $2, $3, $4, $5::timestamptz, $5::timestamptz) RETURNING id",
        name, role, pqxx::binarystring(salt), pqxx::binarystring(hash), ts(at));
    insert_audit(w, by, at, "user_add", 0, "", "", "{\"user\": " + nlohmann::json(name).dump() + ", \"role\": \"" + role + "\"}");
    w.commit();
    return token_of(r[0][0].as<int64_t>(), secret);
  });
}

Result<std::string> UserStore::rotate_token(const std::string& name, const Actor& by, Time at) {
  const std::string salt = random_salt(), secret = random_secret();
  const std::string hash = token_hash(salt, secret);
  return c_.run("rotate_token", [&](Pq& pq) -> Result<std::string> {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "UPDATE users SET token_salt = $2, token_hash = $3, token_set_at = $4::timestamptz WHERE name = $1 AND NOT disabled "
        "RETURNING id, role",
        name, pqxx::binarystring(salt), pqxx::binarystring(hash), ts(at));
    if (r.empty()) {
      if (w.exec_params("SELECT 1 FROM users WHERE name = $1", name).empty()) return Error::not_found("no user " + quote(name));
      return Error::conflict("user " + quote(name) + " is disabled: add a new user instead");
    }
    insert_audit(w, by, at, "user_rotate", 0, "", "", "{\"user\": " + nlohmann::json(name).dump() + "}");
    w.commit();
    return token_of(r[0][0].as<int64_t>(), secret);
  });
}

Status UserStore::disable_user(const std::string& name, const Actor& by, Time at) {
  return c_.run("disable_user", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params("SELECT disabled, role FROM users WHERE name = $1 FOR UPDATE", name);
    if (r.empty()) return Error::not_found("no user " + quote(name));
    if (r[0][0].as<bool>()) return Error::conflict("user " + quote(name) + " is disabled already");
    w.exec_params("UPDATE users SET disabled = true, disabled_at = $2::timestamptz WHERE name = $1", name, ts(at));
    insert_audit(w, by, at, "user_disable", 0, "", "", "{\"user\": " + nlohmann::json(name).dump() + "}");
    w.commit();
    return Ok{};
  });
}

Result<std::vector<UserRow>> UserStore::users() {
  return c_.run("users", [&](Pq& pq) -> Result<std::vector<UserRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec("SELECT id, name, role, disabled, " MEDIC_US("created_at") ", " MEDIC_US("token_set_at") ", " MEDIC_US(
        "disabled_at") " FROM users ORDER BY name");
    std::vector<UserRow> out;
    for (const auto& row : r) {
      UserRow u;
      u.id = row[0].as<int64_t>();
      u.name = read_text(row[1]);
      u.role = read_text(row[2]);
      u.disabled = row[3].as<bool>();
      u.created_at = *read_time(row[4]);
      u.token_set_at = *read_time(row[5]);
      u.disabled_at = read_time(row[6]);
      out.push_back(std::move(u));
    }
    return out;
  });
}

Result<std::optional<Identity>> UserStore::authenticate(const std::string& token) {
  const auto parts = parse_token(token);
  if (!parts) return std::optional<Identity>{};
  return c_.run("authenticate", [&](Pq& pq) -> Result<std::optional<Identity>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params("SELECT name, role, disabled, token_salt, token_hash FROM users WHERE id = $1", parts->id);
    // The hash is computed either way, so that an unknown id takes as long as a wrong secret.
    const std::string salt = r.empty() ? std::string(16, '\0') : pqxx::binarystring(r[0][3]).str();
    const std::string want = r.empty() ? std::string(32, '\1') : pqxx::binarystring(r[0][4]).str();
    const bool match = same_bytes(token_hash(salt, parts->secret), want);
    if (r.empty() || !match) return std::optional<Identity>{};
    return std::optional<Identity>{Identity{read_text(r[0][0]), read_text(r[0][1]), r[0][2].as<bool>()}};
  });
}

}  // namespace medic::db
