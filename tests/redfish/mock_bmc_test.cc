// The Redfish client over real HTTPS on loopback, against the mock BMC serving
// tests/redfish/data/node1 with a certificate generated at test time.
#include "sim/mock_bmc/mock_bmc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/time.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/event_stream.h"
#include "sources/redfish/redfish_collector.h"
#include "sources/redfish/redfish_runner.h"

namespace faultline::redfish {
namespace {

using sim::Fault;
using sim::FaultKind;
using sim::MockBmc;
using sim::MockBmcOptions;

class RedfishMockBmcTest : public ::testing::Test {
 protected:
  void Start(MockBmcOptions o = {}) {
    o.mockup_dir = std::string(FAULTLINE_SOURCE_DIR) + "/tests/redfish/data/node1";
    auto bmc = MockBmc::Start(o);
    ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
    bmc_ = std::move(*bmc);
  }
  CurlOptions Tls() {
    CurlOptions c;
    c.ca_file = bmc_->ca_cert_path();
    return c;
  }
  RedfishClientOptions Client(AuthMode auth = AuthMode::kSession) {
    RedfishClientOptions o;
    o.base_url = bmc_->base_url();
    o.credentials = {"admin", "mockpassword"};
    o.auth = auth;
    o.backoff_ms = 10;
    o.request_timeout_ms = 5000;
    return o;
  }
  int64_t Deadline(int64_t seconds = 30) const { return clock_.MonotonicNs() + seconds * kNsPerSec; }
  SweepResult SweepWith(const CurlOptions& tls, const RedfishClientOptions& opts) {
    CurlHttpClient http(tls);
    RedfishClient client(http, clock_, opts);
    Status login = client.Login(Deadline());
    if (!login.ok()) {
      SweepResult failed;
      failed.errors.push_back("login: " + login.message());
      return failed;
    }
    RedfishCollector collector(client, {.node = "n1"});
    return collector.Sweep(Deadline());
  }
  static size_t Count(const SweepResult& r, ObsKind kind) {
    size_t n = 0;
    for (const auto& o : r.observations) n += o.kind == kind;
    return n;
  }

  SystemClock clock_;
  std::unique_ptr<MockBmc> bmc_;
};

TEST_F(RedfishMockBmcTest, HttpsWithCaAndSession) {
  Start();
  SweepResult r = SweepWith(Tls(), Client());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(Count(r, ObsKind::kPsuState), 4u);
  EXPECT_EQ(Count(r, ObsKind::kLeak), 1u);
  EXPECT_EQ(Count(r, ObsKind::kSelEntry), 2u);  // the mock applies $skip=2 to a 2-entry page
  EXPECT_EQ(bmc_->sessions_created(), 1u);
  EXPECT_EQ(bmc_->sessions_deleted(), 1u);  // the client logged out
  EXPECT_TRUE(bmc_->open_sessions().empty());
  EXPECT_EQ(r.requests, bmc_->total_requests() - 2);  // minus the session POST and DELETE
}

TEST_F(RedfishMockBmcTest, OneClientKeepsItsConnectionsAcrossRequestsAndSweeps) {
  MockBmcOptions o;
  o.keep_alive_timeout_s = 1;
  Start(o);
  CurlHttpClient http(Tls());
  RedfishClient client(http, clock_, Client(AuthMode::kBasic));
  RedfishCollector collector(client, {.node = "n1"});
  SweepResult first = collector.Sweep(Deadline());
  ASSERT_TRUE(first.errors.empty()) << first.errors[0];
  SweepResult second = collector.Sweep(Deadline());
  ASSERT_TRUE(second.errors.empty()) << second.errors[0];
  EXPECT_GT(second.observations.size(), 20u);  // the SEL entries read already are not read again
  // Dozens of requests over at most max_in_flight connections, not one handshake each.
  EXPECT_GT(bmc_->total_requests(), 20u);
  EXPECT_LE(bmc_->connections_seen(), static_cast<uint64_t>(Client().max_in_flight));
  // The BMC closes idle connections (after 1 s here): the next sweep opens new ones and
  // loses nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  SweepResult third = collector.Sweep(Deadline());
  ASSERT_TRUE(third.errors.empty()) << third.errors[0];
  EXPECT_EQ(third.observations.size(), second.observations.size());
}

TEST_F(RedfishMockBmcTest, TlsVerificationIsOnByDefault) {
  Start();
  SweepResult r = SweepWith(CurlOptions{}, Client());  // system trust store: the self-signed cert fails
  ASSERT_FALSE(r.errors.empty());
  EXPECT_TRUE(r.observations.empty());
  EXPECT_EQ(bmc_->sessions_created(), 0u);
}

TEST_F(RedfishMockBmcTest, InsecureSkipsVerificationExplicitly) {
  Start();
  CurlOptions insecure;
  insecure.insecure = true;
  SweepResult r = SweepWith(insecure, Client());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_GT(r.observations.size(), 20u);
}

TEST_F(RedfishMockBmcTest, PlainHttpIsRefusedUnlessAllowed) {
  MockBmcOptions o;
  o.tls = false;
  Start(o);
  SweepResult refused = SweepWith(CurlOptions{}, Client());
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].find("refusing plain http"), std::string::npos) << refused.errors[0];
  EXPECT_EQ(bmc_->total_requests(), 0u);  // not even the session POST with the password
  RedfishClientOptions lab = Client();
  lab.allow_http = true;
  SweepResult allowed = SweepWith(CurlOptions{}, lab);
  EXPECT_TRUE(allowed.errors.empty()) << allowed.errors[0];
  EXPECT_GT(allowed.observations.size(), 20u);
  bool warned = false;
  for (const auto& w : allowed.warnings) warned |= w.find("plain http to the BMC allowed") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(RedfishMockBmcTest, BasicAuthAndWrongPassword) {
  Start();
  SweepResult basic = SweepWith(Tls(), Client(AuthMode::kBasic));
  EXPECT_TRUE(basic.errors.empty()) << basic.errors[0];
  EXPECT_EQ(bmc_->sessions_created(), 0u);
  RedfishClientOptions wrong = Client(AuthMode::kBasic);
  wrong.credentials.password = "nope";
  SweepResult denied = SweepWith(Tls(), wrong);
  ASSERT_FALSE(denied.errors.empty());
  EXPECT_NE(denied.errors[0].find("permission denied"), std::string::npos) << denied.errors[0];
  RedfishClientOptions wrong_session = Client();
  wrong_session.credentials.password = "nope";
  SweepResult refused = SweepWith(Tls(), wrong_session);
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].find("login"), std::string::npos);
}

TEST_F(RedfishMockBmcTest, SessionLimitFallsBackToBasic) {
  MockBmcOptions o;
  o.max_sessions = 0;
  Start(o);
  SweepResult r = SweepWith(Tls(), Client());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(bmc_->requests_for("/redfish/v1/SessionService/Sessions"), 3u);
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("falling back to Basic") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(RedfishMockBmcTest, ServerPagingIsFollowed) {
  MockBmcOptions o;
  o.page_size = 1;
  Start(o);
  SweepResult r = SweepWith(Tls(), Client());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(Count(r, ObsKind::kPsuState), 4u);  // PowerSupplies came in two pages
  EXPECT_EQ(Count(r, ObsKind::kSelEntry), 2u);
  EXPECT_GT(bmc_->requests_for("/redfish/v1/Chassis/GPU1/PowerSubsystem/PowerSupplies"), 1u);
}

TEST_F(RedfishMockBmcTest, TransientServerErrorsAreRetried) {
  Start();
  Fault f;
  f.kind = FaultKind::kStatus;
  f.status = 500;
  f.path_glob = "*/Thermal";
  f.times = 2;
  bmc_->AddFault(f);
  SweepResult r = SweepWith(Tls(), Client());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(bmc_->requests_for("/redfish/v1/Chassis/GPU1/Thermal"), 3u);
}

TEST_F(RedfishMockBmcTest, PersistentFaultsAreErrorsAndTheWalkGoesOn) {
  Start();
  Fault unavailable{FaultKind::kStatus, "*/Thermal", 503};
  Fault malformed{FaultKind::kMalformedJson, "*/Power"};
  Fault truncated{FaultKind::kTruncatedBody, "*/Pumps/Pump1"};
  for (const Fault& f : {unavailable, malformed, truncated}) bmc_->AddFault(f);
  SweepResult r = SweepWith(Tls(), Client());
  ASSERT_EQ(r.errors.size(), 3u);
  std::string all;
  for (const auto& e : r.errors) all += e + "\n";
  EXPECT_NE(all.find("/Thermal: unavailable"), std::string::npos) << all;
  EXPECT_NE(all.find("malformed JSON"), std::string::npos) << all;
  EXPECT_NE(all.find("/Pump1: corrupt input"), std::string::npos) << all;
  EXPECT_EQ(Count(r, ObsKind::kLeak), 1u);
}

TEST_F(RedfishMockBmcTest, HugeBodyIsCutOff) {
  Start();
  Fault huge{FaultKind::kHugeBody, "*/ThermalMetrics"};
  huge.body_bytes = 24u << 20;
  bmc_->AddFault(huge);
  CurlOptions tls = Tls();
  tls.max_body_bytes = 1u << 20;
  SweepResult r = SweepWith(tls, Client());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("size limit"), std::string::npos) << r.errors[0];
}

TEST_F(RedfishMockBmcTest, StalledConnectionRespectsTheDeadline) {
  Start();
  Fault stall{FaultKind::kStall, "*/Sensors/PSU1_Vin"};
  bmc_->AddFault(stall);
  CurlHttpClient http(Tls());
  RedfishClientOptions o = Client(AuthMode::kBasic);
  o.request_timeout_ms = 600;
  o.retries = 0;
  RedfishClient client(http, clock_, o);
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline(20));
  bmc_->ReleaseStalled();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("PSU1_Vin: timeout"), std::string::npos) << r.errors[0];
  EXPECT_EQ(Count(r, ObsKind::kLeak), 1u);  // everything else was read
}

TEST_F(RedfishMockBmcTest, SseEventsArriveAsObservations) {
  MockBmcOptions o;
  o.advertise_sse = true;
  Start(o);
  CurlHttpClient http(Tls());
  RedfishClient client(http, clock_, Client(AuthMode::kBasic));
  std::atomic<int> got{0};
  std::string message_id;
  std::mutex mu;
  EventStreamOptions so;
  so.sse_uri = "/redfish/v1/EventService/SSE";
  so.filter_properties = {"RegistryPrefix"};
  EventStream stream(client, so, MapContext{}, [&](std::vector<Observation> obs) {
    std::lock_guard<std::mutex> lock(mu);
    message_id = obs.at(0).attrs.at("message_id");
    got += static_cast<int>(obs.size());
  });
  std::thread t([&] { (void)stream.Run(); });
  for (int i = 0; i < 500 && bmc_->sse_subscribers() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(bmc_->sse_subscribers(), 1);
  bmc_->PushEvent({.message_id = "Power.1.0.PowerSupplyFailed", .message_args = {"PSU2"}, .severity = "Critical"});
  for (int i = 0; i < 500 && got.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stream.Stop();
  t.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(message_id, "Power.1.0.PowerSupplyFailed");
  EXPECT_NE(bmc_->last_sse_filter().find("RegistryPrefix eq 'Power'"), std::string::npos);
  EXPECT_FALSE(stream.last_event_id().empty());
}

TEST_F(RedfishMockBmcTest, RunnerSweepsOnItsOwnThreadAndLogsOutOnStop) {
  MockBmcOptions o;
  o.advertise_sse = true;
  Start(o);
  CurlHttpClient http(Tls());
  RedfishClient client(http, clock_, Client());
  RedfishCollector collector(client, {.node = "n1"});
  std::mutex mu;
  std::vector<SweepResult> results;
  RunnerOptions ro;
  ro.interval_ms = 20;
  ro.sweep_deadline_ms = 10'000;
  RedfishRunner runner(client, collector, ro, [&](SweepResult r) {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
  });
  runner.Start();
  for (int i = 0; i < 1000 && runner.sweeps() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 500 && bmc_->sse_subscribers() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(runner.streaming());
  runner.Stop();
  EXPECT_GE(runner.sweeps(), 2u);
  EXPECT_EQ(bmc_->sessions_created(), 1u);
  EXPECT_EQ(bmc_->sessions_deleted(), 1u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(results.size(), 2u);
  EXPECT_TRUE(results[0].errors.empty());
  EXPECT_EQ(Count(results[0], ObsKind::kSelEntry), 2u);
  EXPECT_EQ(Count(results[1], ObsKind::kSelEntry), 0u);  // incremental
}

}  // namespace
}  // namespace faultline::redfish
