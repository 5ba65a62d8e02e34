// SPDX-License-Identifier: Apache-2.0
// Errors as values: every fallible library call returns Status or Result<T>; library code never exits or aborts.
//
// Messages name where the problem is, in the compiler style `file:line: field: reason`, so a user can jump to it.
// The CLI maps any error to exit code 2.
//
//   Result<Trace> r = ReadTrace("ivl.csv");
//   if (!r) { std::cerr << r.error().message() << "\n"; return 2; }
//   const Trace& trace = *r;
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace mmtwin {

class Error {
 public:
  Error() = default;
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const { return message_; }

  // Builds `file:line: field: reason`; line <= 0 or empty field are left out.
  static Error At(const std::string& file, long line, const std::string& field, const std::string& reason);
  // Prefixes context, e.g. Error("bad").Wrap("reading ivl.csv") -> "reading ivl.csv: bad".
  Error Wrap(const std::string& context) const { return Error(context + ": " + message_); }

 private:
  std::string message_;
};

// Success or an Error.
class Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)), ok_(false) {}  // NOLINT: implicit on purpose, `return Error(...)`.
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

// A value or an Error (like absl::StatusOr / std::expected).
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose.
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace mmtwin

// Propagates an error from an expression yielding Status or Result<T>.
#define MMTWIN_RETURN_IF_ERROR(expr)               \
  do {                                             \
    auto _mmtwin_s = (expr);                       \
    if (!_mmtwin_s.ok()) return _mmtwin_s.error(); \
  } while (0)

#define MMTWIN_CONCAT_INNER(a, b) a##b
#define MMTWIN_CONCAT(a, b) MMTWIN_CONCAT_INNER(a, b)
// MMTWIN_ASSIGN_OR_RETURN(auto x, F()); declares x from a Result or returns its error.
#define MMTWIN_ASSIGN_OR_RETURN(decl, expr) \
  MMTWIN_ASSIGN_OR_RETURN_IMPL(MMTWIN_CONCAT(_mmtwin_r, __LINE__), decl, expr)
#define MMTWIN_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.error();                  \
  decl = std::move(tmp).value()
