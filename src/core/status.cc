#include "core/status.h"

#include <cerrno>
#include <cstring>

namespace faultline {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kCorrupt:
      return "corrupt input";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  if (!message_.empty()) s += ": " + message_;
  return s;
}

Status StatusFromErrno(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status(StatusCode::kNotFound, std::move(msg));
    case EACCES:
    case EPERM:
    case EROFS:
      return Status(StatusCode::kPermissionDenied, std::move(msg));
    default:
      return Status(StatusCode::kIoError, std::move(msg));
  }
}

}  // namespace faultline
