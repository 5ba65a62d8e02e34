// SPDX-License-Identifier: Apache-2.0
// Errors as values: every fallible library call returns Status or Result<T>; library code never exits or aborts.
//
// Messages name where the problem is, in the compiler style `file:line: field: reason`, so a user can jump to it.
// Every error has a kind, so that callers decide by kind and never by message text: a cancellation is a
// cancellation wherever it happened (it carries no location and Wrap leaves it alone), and the clients show it as
// one (the CLI: "cancelled", exit 130; the GUI: "cancelled", no error marker).
//
//   Result<Trace> r = ReadTrace("ivl.csv");
//   if (!r) { std::cerr << r.error().message() << "\n"; return r.error().cancelled() ? 130 : 2; }
//   const Trace& trace = *r;
//
// Status and Result are [[nodiscard]]: an ignored error does not compile under -Werror.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace mmtwin {

enum class ErrorKind : uint8_t {
  kInvalidInput,  // the user's input (a file, a field, an option) is wrong: the message names where
  kCancelled,     // the caller's cancel flag (or SIGINT / SIGTERM) ended the work: not a failure of the input
  kIo,            // reading or writing a file or folder failed (missing, permissions, disk full)
  kExternal,      // another program or library failed: a child process, SQLite, SimGrid, Torch, c10d
  kInternal,      // a broken invariant of mmtwin itself: a bug to report
};
// "invalid input", "cancelled", "I/O", "external", "internal".
const char* ErrorKindName(ErrorKind kind);

class Error {
 public:
  Error() = default;
  // An error of `kind` (invalid input unless told otherwise: most errors are about what the user gave).
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kInvalidInput)
      : message_(std::move(message)), kind_(kind) {}
  const std::string& message() const { return message_; }
  ErrorKind kind() const { return kind_; }
  bool cancelled() const { return kind_ == ErrorKind::kCancelled; }

  // Builds `file:line: field: reason` (invalid input); line <= 0 or empty field are left out.
  static Error At(const std::string& file, long line, const std::string& field, const std::string& reason);
  // The cancellation: message "cancelled", kind kCancelled.
  static Error Cancelled() { return Error("cancelled", ErrorKind::kCancelled); }
  static Error Io(std::string message) { return Error(std::move(message), ErrorKind::kIo); }
  static Error External(std::string message) { return Error(std::move(message), ErrorKind::kExternal); }
  static Error Internal(std::string message) { return Error(std::move(message), ErrorKind::kInternal); }

  // Prefixes context, keeping the kind, e.g. Error("bad").Wrap("reading ivl.csv") -> "reading ivl.csv: bad". A
  // cancellation is returned unchanged: it happened to the run, not at a place in the input.
  Error Wrap(const std::string& context) const {
    if (cancelled()) return *this;
    return Error(context + ": " + message_, kind_);
  }
  // The same message prefix as Wrap, as a new error of another kind (a cancellation stays one).
  Error WrapAs(const std::string& context, ErrorKind kind) const {
    if (cancelled()) return *this;
    return Error(context + ": " + message_, kind);
  }

 private:
  std::string message_;
  ErrorKind kind_ = ErrorKind::kInvalidInput;
};

// Success or an Error.
class [[nodiscard]] Status {
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
class [[nodiscard]] Result {
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
