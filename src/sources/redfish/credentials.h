// BMC credentials: read from a file the operator protects, or from the environment.
// Never printed: Credentials has no streaming operator and errors never quote it.
#pragma once

#include <string>

#include "core/status.h"

namespace faultline::redfish {

struct Credentials {
  std::string user;
  std::string password;
  bool empty() const { return user.empty() && password.empty(); }
};

// The password is the file's first line (trailing CR/LF stripped). Refuses a file that
// group or others can read or write (kPermissionDenied), like ssh does with keys.
Result<std::string> ReadPasswordFile(const std::string& path);

// FAULTLINE_BMC_USER / FAULTLINE_BMC_PASSWORD (names overridable); kNotFound if unset.
Result<Credentials> CredentialsFromEnv(const char* user_var = "FAULTLINE_BMC_USER",
                                       const char* password_var = "FAULTLINE_BMC_PASSWORD");

// RFC 7617 "Basic <base64(user:password)>".
std::string BasicAuthHeader(const Credentials& credentials);

}  // namespace faultline::redfish
