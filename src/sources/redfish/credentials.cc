#include "sources/redfish/credentials.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

namespace faultline::redfish {

Result<std::string> ReadPasswordFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status(StatusCode::kNotFound, "password file not found: " + path);
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kInvalidArgument, "password file is not a regular file: " + path);
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "password file " + path + " is accessible by group or others; chmod 600 it");
  }
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kPermissionDenied, "cannot read password file: " + path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.empty()) return Status(StatusCode::kInvalidArgument, "password file is empty: " + path);
  return line;
}

Result<Credentials> CredentialsFromEnv(const char* user_var, const char* password_var) {
  const char* user = std::getenv(user_var);
  const char* password = std::getenv(password_var);
  if (!user || !password) {
    return Status(StatusCode::kNotFound, std::string(user_var) + " / " + password_var + " not set");
  }
  return Credentials{user, password};
}

std::string BasicAuthHeader(const Credentials& c) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string in = c.user + ":" + c.password;
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return "Basic " + out;
}

}  // namespace faultline::redfish
