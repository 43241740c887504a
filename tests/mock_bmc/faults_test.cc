// Every injected fault, observed by a real libcurl client over HTTPS.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "fixture.h"

namespace faultline::sim::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

class MockBmcFaults : public MockBmcFixture {
 protected:
  void SetUp() override { StartBmc(MiniOptions()); }
  void WaitForStalled(int n) {
    for (int i = 0; i < 2000 && bmc_->stalled_requests() < n; ++i) std::this_thread::sleep_for(milliseconds(5));
    ASSERT_EQ(bmc_->stalled_requests(), n);
  }
};

TEST_F(MockBmcFaults, LatencyDelaysEveryAnswer) {
  bmc_->SetLatency(milliseconds(150));
  auto start = steady_clock::now();
  HttpResult r = Get("/redfish/v1/Chassis");
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(steady_clock::now() - start, milliseconds(150));  // a lower bound: the delay happened
  bmc_->SetLatency(milliseconds(0));
  bmc_->AddFault({.kind = FaultKind::kLatency, .path_glob = "*/Power", .latency = milliseconds(120)});
  start = steady_clock::now();
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Power").status, 200);
  EXPECT_GE(steady_clock::now() - start, milliseconds(120));
}

TEST_F(MockBmcFaults, StatusOnEveryNthRequest) {
  bmc_->AddFault({.kind = FaultKind::kStatus, .path_glob = "*", .status = 500, .every_nth = 3});
  std::vector<long> codes;
  for (int i = 0; i < 6; ++i) codes.push_back(Get("/redfish/v1/Chassis").status);
  EXPECT_EQ(codes, (std::vector<long>{200, 200, 500, 200, 200, 500}));
  HttpResult r;
  for (int i = 0; i < 3; ++i) r = Get("/redfish/v1/Chassis");
  EXPECT_EQ(Json(r)["error"]["code"], "Base.1.8.InternalError");
}

TEST_F(MockBmcFaults, Status503ForAPathPatternWithRetryAfterAndTimesLimit) {
  bmc_->AddFault({.kind = FaultKind::kStatus, .path_glob = "/redfish/v1/Chassis/*/Thermal", .status = 503, .times = 2});
  HttpResult r = Get("/redfish/v1/Chassis/1U/Thermal");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(Json(r)["error"]["code"], "Base.1.8.ServiceTemporarilyUnavailable");
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Power").status, 200);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Thermal").status, 503);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Thermal").status, 200);  // fired twice: done
  bmc_->AddFault({.kind = FaultKind::kStatus, .status = 503});
  EXPECT_EQ(Get("/redfish/v1/").status, 503);
  bmc_->ClearFaults();
  EXPECT_EQ(Get("/redfish/v1/").status, 200);
}

TEST_F(MockBmcFaults, MalformedJsonHasAValidLengthButDoesNotParse) {
  bmc_->AddFault({.kind = FaultKind::kMalformedJson, .path_glob = "*/Power"});
  HttpResult r = Get("/redfish/v1/Chassis/1U/Power");
  EXPECT_EQ(r.curl, CURLE_OK);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.body.empty());
  EXPECT_TRUE(Json(r).is_discarded());
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U/Thermal"))["Id"], "Thermal");
}

TEST_F(MockBmcFaults, TruncatedBodyEndsBeforeContentLength) {
  bmc_->AddFault({.kind = FaultKind::kTruncatedBody, .path_glob = "*/Thermal"});
  HttpResult r = Get("/redfish/v1/Chassis/1U/Thermal");
  EXPECT_EQ(r.curl, CURLE_PARTIAL_FILE) << curl_easy_strerror(r.curl);
  const size_t promised = std::stoul(r.headers["content-length"]);
  EXPECT_LT(r.body.size(), promised);
  EXPECT_GT(r.body.size(), 0u);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Power").status, 200);  // the server carries on
}

TEST_F(MockBmcFaults, HugeBodyIsStreamedValidJsonOfTheRequestedSize) {
  constexpr uint64_t kSize = 100ull * 1024 * 1024;
  bmc_->AddFault({.kind = FaultKind::kHugeBody, .path_glob = "/redfish/v1/Chassis/1U/Sensors", .times = 1});
  HttpRequest req = Req("/redfish/v1/Chassis/1U/Sensors");
  req.keep_body = false;
  req.timeout_ms = 120000;
  uint64_t received = 0;
  std::string head, tail;
  bool middle_is_padding = true;
  req.on_data = [&](const std::string& chunk) {
    if (head.size() < 12) head += chunk.substr(0, 12 - head.size());
    tail = (tail + chunk).substr((tail + chunk).size() > 2 ? (tail + chunk).size() - 2 : 0);
    if (received > 64 && received + chunk.size() < kSize - 64) {
      middle_is_padding = middle_is_padding && chunk.find_first_not_of('x') == std::string::npos;
    }
    received += chunk.size();
    return true;
  };
  HttpResult r = Fetch(req);
  EXPECT_EQ(r.curl, CURLE_OK) << curl_easy_strerror(r.curl);
  EXPECT_EQ(r.headers["content-length"], std::to_string(kSize));
  EXPECT_EQ(received, kSize);
  EXPECT_EQ(head, "{\"Padding\":\"");
  EXPECT_EQ(tail, "\"}");
  EXPECT_TRUE(middle_is_padding);
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U/Sensors"))["Members@odata.count"], 25);
}

TEST_F(MockBmcFaults, ClientAbortingAHugeBodyDoesNotHurtTheServer) {
  bmc_->AddFault({.kind = FaultKind::kHugeBody, .path_glob = "*/Sensors", .times = 1});
  HttpRequest req = Req("/redfish/v1/Chassis/1U/Sensors");
  req.keep_body = false;
  uint64_t received = 0;
  req.on_data = [&](const std::string& chunk) {
    received += chunk.size();
    return received < (1u << 20);  // like a client with a 1 MiB body limit
  };
  EXPECT_EQ(Fetch(req).curl, CURLE_WRITE_ERROR);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Sensors").status, 200);
}

TEST_F(MockBmcFaults, StalledRequestIsAnsweredOnRelease) {
  bmc_->AddFault({.kind = FaultKind::kStall, .path_glob = "*/Power", .times = 1});
  HttpResult stalled;
  std::thread client([&] { stalled = Get("/redfish/v1/Chassis/1U/Power"); });
  WaitForStalled(1);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Thermal").status, 200);  // others are still served
  bmc_->ReleaseStalled();
  client.join();
  EXPECT_EQ(stalled.status, 200);
  EXPECT_EQ(Json(stalled)["Id"], "Power");
  EXPECT_EQ(bmc_->stalled_requests(), 0);
}

TEST_F(MockBmcFaults, StalledConnectionsDoNotBlockShutdown) {
  bmc_->AddFault({.kind = FaultKind::kStall});
  std::vector<HttpResult> results(3);
  std::vector<std::thread> clients;
  for (auto& r : results) clients.emplace_back([&] { r = Get("/redfish/v1/Chassis"); });
  WaitForStalled(3);
  bmc_->Stop();  // must return although three requests never got an answer
  for (auto& c : clients) c.join();
  for (const auto& r : results) EXPECT_NE(r.status, 200);
}

TEST_F(MockBmcFaults, FaultsCanTargetOneMethod) {
  bmc_->AddFault({.kind = FaultKind::kStatus, .status = 503, .method = "POST"});
  EXPECT_EQ(Get("/redfish/v1/Chassis").status, 200);
  HttpRequest login = Req("/redfish/v1/SessionService/Sessions", false);
  login.method = "POST";
  login.body = R"({"UserName": "admin", "Password": "mockpassword"})";
  EXPECT_EQ(Fetch(login).status, 503);
  EXPECT_TRUE(bmc_->open_sessions().empty());
}

}  // namespace
}  // namespace faultline::sim::testing
