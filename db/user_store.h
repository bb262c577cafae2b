// People and service accounts: a name, a role (viewer, operator, admin) and an API token
// handed out once and kept only as a salted hash (common/token.h). Every change is audited.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"

namespace medic::db {

struct UserRow {
  int64_t id = 0;
  std::string name, role;
  bool disabled = false;
  Time created_at{}, token_set_at{};
  std::optional<Time> disabled_at;
};

// Who a token belongs to.
struct Identity {
  std::string name, role;
  bool disabled = false;
};

bool valid_role(const std::string& role);

class UserStore {
 public:
  explicit UserStore(Connection& c) : c_(c) {}

  // A new user; returns the token (the only time it is seen). Refused (conflict) when the
  // name is taken, (invalid) for a bad name or role.
  Result<std::string> add_user(const std::string& name, const std::string& role, const Actor& by, Time at);
  // A new token for the user; the old one stops working at once.
  Result<std::string> rotate_token(const std::string& name, const Actor& by, Time at);
  // Its token stops working; the user and its audit rows stay.
  Status disable_user(const std::string& name, const Actor& by, Time at);
  Result<std::vector<UserRow>> users();
  // The identity a token stands for; nullopt when it stands for nobody (malformed, unknown,
  // or the wrong secret). A disabled user's token comes back with `disabled`.
  Result<std::optional<Identity>> authenticate(const std::string& token);

 private:
  Connection& c_;
};

}  // namespace medic::db
