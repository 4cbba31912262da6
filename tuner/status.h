// Status and StatusOr<T>: errors as values in the topotune core.
//
// Every fallible function in tuner/, db/ and daemon/ returns a Status or a
// StatusOr<T>. A Status carries a code and a human-readable message that says
// what was wrong and where (file, line, field, value, what is allowed).
// Exceptions are reserved for programmer errors and never cross a C ABI or an
// MPI call.
//
// Both classes are [[nodiscard]]: a call whose Status or StatusOr is dropped
// is a compiler warning (an error in CI builds), so an error cannot be lost
// by forgetting to look. Where dropping it is the intent (best-effort cleanup
// on a path that already fails, a shutdown step whose failure has nowhere to
// go), say so with IgnoreError() and a comment saying why.
//
// Thread-safety: values; a const Status may be read from many threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace topotune {

class [[nodiscard]] Status {
 public:
  // kCancelled: the caller asked a long computation to stop (tuner/cancel.h).
  enum class Code { kOk = 0, kInvalidArgument, kNotFound, kFailedPrecondition, kInternal, kIoError, kCancelled };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status FailedPrecondition(std::string msg) { return Status(Code::kFailedPrecondition, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  static Status IoError(std::string msg) { return Status(Code::kIoError, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(Code::kCancelled, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>", or "ok".
  std::string ToString() const;
  // Drops this status on purpose (see the top of this file); does nothing.
  void IgnoreError() const {}

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Holds either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  StatusOr(T value) : v_(std::move(value)) {}                                              // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // Drops the value and the status on purpose (see the top of this file).
  void IgnoreError() const {}

 private:
  std::variant<Status, T> v_;
};

}  // namespace topotune

// Returns early from the enclosing function when `expr` is not ok.
#define TOPOTUNE_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::topotune::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)
