// Errors as values across module boundaries (STYLE.md rule 5). A Status says *what*
// failed so callers (and the isolator) can tell missing data from corrupt data from a
// timeout. Result<T> is a value or a Status. Exceptions thrown by third-party
// libraries stop at the module that called them and become a Status there.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace faultline {

enum class StatusCode {
  kOk,
  kNotFound,         // file, resource or symbol absent
  kInvalidArgument,  // caller passed something unusable
  kCorrupt,          // input present but malformed
  kUnavailable,      // layer or service not reachable right now (retry later)
  kTimeout,
  kPermissionDenied,
  kUnsupported,  // the device/driver/BMC does not offer this
  kIoError,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::string_view StatusCodeName(StatusCode code);

// A failed system call as a Status: "what: strerror". ENOENT/ENOTDIR -> kNotFound,
// EACCES/EPERM/EROFS -> kPermissionDenied, anything else -> kIoError. Callers with their own
// meaning for other codes (sysfs: EOPNOTSUPP = attribute not implemented) check those first.
Status StatusFromErrno(int err, const std::string& what);

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace faultline
