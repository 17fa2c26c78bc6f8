#pragma once
// Errors as values: libsprof never throws across its public API. Every fallible
// call returns Result<T>; cmd/ turns the ErrorKind into a message and an exit code.

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace sprof {

enum class ErrorKind {
  usage,        // a flag or argument the user gave is wrong
  bad_input,    // a file or directory the user pointed at is missing, malformed or unreadable
  io,           // reading or writing failed for a reason outside the input's content
  permission,   // the OS refused (ptrace, process_vm_readv, file modes)
  not_python,   // the target process is not a CPython interpreter sprof can read
  unsupported,  // a Python version, build or format sprof does not handle
  runtime,      // anything else that went wrong while working
};

const char* to_string(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::runtime;
  std::string message;  // names the file, argument or process it is about
};

template <class... Args>
Error make_error(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  return Error{kind, fmt::format(format, std::forward<Args>(args)...)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace sprof

// Propagate an error: SPROF_TRY(auto x, read_thing(path)); or SPROF_TRY_STATUS(write_thing()).
#define SPROF_CONCAT_INNER(a, b) a##b
#define SPROF_CONCAT(a, b) SPROF_CONCAT_INNER(a, b)
#define SPROF_TRY_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                    \
  if (!tmp.ok()) return std::move(tmp).error(); \
  decl = std::move(tmp).value()
#define SPROF_TRY(decl, expr) SPROF_TRY_IMPL(SPROF_CONCAT(sprof_try_, __LINE__), decl, expr)
#define SPROF_TRY_STATUS(expr)                                 \
  do {                                                         \
    auto sprof_status_ = (expr);                               \
    if (!sprof_status_.ok()) return std::move(sprof_status_).error(); \
  } while (0)
