// Errors from the network, the database and switches are values (STYLE 9): a Result holds
// either the value or an Error whose message says what went wrong and where, and whose
// kind says what a caller can do about it (the API maps kinds to HTTP statuses; nothing
// chooses a status by matching message text).
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace medic {

enum class ErrorKind : uint8_t {
  internal,     // a fault of ours, or one nobody classified: retrying will not help
  invalid,      // the input is wrong (a bad argument, body or file)
  not_found,    // what was named does not exist
  conflict,     // it exists, but its state does not allow this now
  unavailable,  // a dependency (database, switch, network) did not answer: try again later
  forbidden,    // the caller may not do this
  indeterminate,  // a request went out and its answer was lost or not understood (a timeout, a cut
                  // connection, a 5xx, garbage): it may or may not have been carried out
};
std::string_view to_string(ErrorKind k);

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::internal;

  static Error invalid(std::string m) { return {std::move(m), ErrorKind::invalid}; }
  static Error not_found(std::string m) { return {std::move(m), ErrorKind::not_found}; }
  static Error conflict(std::string m) { return {std::move(m), ErrorKind::conflict}; }
  static Error unavailable(std::string m) { return {std::move(m), ErrorKind::unavailable}; }
  static Error forbidden(std::string m) { return {std::move(m), ErrorKind::forbidden}; }
  static Error internal(std::string m) { return {std::move(m), ErrorKind::internal}; }
  static Error indeterminate(std::string m) { return {std::move(m), ErrorKind::indeterminate}; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const std::string& error() const {
    assert(!ok());
    return std::get<1>(v_).message;
  }
  ErrorKind kind() const {
    assert(!ok());
    return std::get<1>(v_).kind;
  }
  // The error whole, to pass on with its kind.
  const Error& failure() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace medic
