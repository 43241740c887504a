// Redfish sessions and credential checks for the mock BMC: POST .../Sessions creates a
// session with a random X-Auth-Token; Basic auth is accepted too. Not thread-safe: the
// MockBmc serialises access. Tokens and passwords are never logged.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline::sim {

struct Session {
  std::string id;
  std::string token;
  std::string user;
};

class SessionTable {
 public:
  SessionTable(std::string user, std::string password, int max_sessions)
      : user_(std::move(user)), password_(std::move(password)), max_sessions_(max_sessions) {}

  // kPermissionDenied: wrong credentials; kUnavailable: the session limit is reached.
  Result<Session> Create(const std::string& user, const std::string& password);
  bool Delete(const std::string& id);
  const Session* ById(const std::string& id) const;
  bool TokenValid(const std::string& token) const;
  // `header` is the whole Authorization header value ("Basic <base64>").
  bool BasicValid(const std::string& header) const;
  bool CredentialsValid(const std::string& user, const std::string& password) const;

  std::vector<Session> Open() const;
  void SetMax(int max_sessions) { max_sessions_ = max_sessions; }
  uint64_t created() const { return created_; }
  uint64_t deleted() const { return deleted_; }

 private:
  std::string user_;
  std::string password_;
  int max_sessions_;
  uint64_t next_id_ = 1;
  uint64_t created_ = 0;
  uint64_t deleted_ = 0;
  std::map<std::string, Session> by_id_;
};

// 16 random bytes from OpenSSL as 32 hex characters.
std::string RandomToken();

}  // namespace faultline::sim
