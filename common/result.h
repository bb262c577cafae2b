// Errors from the network, the database and switches are values (STYLE 9): a Result holds
// either the value or an Error whose message says what went wrong and where.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace medic {

struct Error {
  std::string message;
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

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace medic
