#include "sim/mock_bmc/sessions.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace faultline::sim {
namespace {

bool SecretEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Base64 decode via OpenSSL; EVP_DecodeBlock counts '=' padding as zero bytes, so strip them.
bool DecodeBase64(const std::string& in, std::string& out) {
  if (in.empty() || in.size() % 4 != 0 || in.size() > 4096) return false;
  std::string buf(in.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return false;
  size_t pad = in.ends_with("==") ? 2 : in.ends_with("=") ? 1 : 0;
  buf.resize(static_cast<size_t>(n) - pad);
  out = std::move(buf);
  return true;
}

}  // namespace

std::string RandomToken() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool SessionTable::CredentialsValid(const std::string& user, const std::string& password) const {
  return SecretEquals(user, user_) && SecretEquals(password, password_);
}

Result<Session> SessionTable::Create(const std::string& user, const std::string& password) {
  if (!CredentialsValid(user, password)) return Status(StatusCode::kPermissionDenied, "invalid credentials");
  if (static_cast<int>(by_id_.size()) >= max_sessions_) {
    return Status(StatusCode::kUnavailable, "session limit reached");
  }
  Session s{std::to_string(next_id_++), RandomToken(), user};
  if (s.token.empty()) return Status(StatusCode::kInternal, "no randomness for a session token");
  ++created_;
  by_id_[s.id] = s;
  return s;
}

bool SessionTable::Delete(const std::string& id) {
  if (by_id_.erase(id) == 0) return false;
  ++deleted_;
  return true;
}

const Session* SessionTable::ById(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

bool SessionTable::TokenValid(const std::string& token) const {
  if (token.empty()) return false;
  for (const auto& [id, s] : by_id_) {
    if (SecretEquals(token, s.token)) return true;
  }
  return false;
}

bool SessionTable::BasicValid(const std::string& header) const {
  constexpr std::string_view kPrefix = "Basic ";
  if (!header.starts_with(kPrefix)) return false;
  std::string decoded;
  if (!DecodeBase64(header.substr(kPrefix.size()), decoded)) return false;
  size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  return CredentialsValid(decoded.substr(0, colon), decoded.substr(colon + 1));
}

std::vector<Session> SessionTable::Open() const {
  std::vector<Session> out;
  for (const auto& [id, s] : by_id_) out.push_back(s);
  return out;
}

}  // namespace faultline::sim
