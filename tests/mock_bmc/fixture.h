// Shared set-up for the mock BMC tests: the always-on mini-server mockup and a started
// server with helpers that issue authenticated requests over verified HTTPS.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "http_client.h"
#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::sim::testing {

inline std::string DataDir() { return std::string(FAULTLINE_SOURCE_DIR) + "/tests/mock_bmc/data"; }
inline std::string MiniServer() { return DataDir() + "/mini-server"; }
inline std::string SharedMockups() {
  return std::string(FAULTLINE_SOURCE_DIR) + "/../shared/fixtures/redfish/dmtf-mockups";
}

inline MockBmcOptions MiniOptions() {
  MockBmcOptions o;
  o.mockup_dir = MiniServer();
  return o;
}

class MockBmcFixture : public ::testing::Test {
 protected:
  void StartBmc(const MockBmcOptions& options) {
    auto started = MockBmc::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    bmc_ = std::move(started).value();
  }
  HttpRequest Req(const std::string& path, bool auth = true) const {
    HttpRequest r;
    r.url = bmc_->base_url() + path;
    r.ca_path = bmc_->ca_cert_path();
    if (auth) {
      r.user = "admin";
      r.password = "mockpassword";
    }
    return r;
  }
  HttpResult Get(const std::string& path, bool auth = true) const { return Fetch(Req(path, auth)); }
  static nlohmann::json Json(const HttpResult& r) {
    return nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }

  std::unique_ptr<MockBmc> bmc_;
};

}  // namespace faultline::sim::testing
