// RedfishClient + RedfishCollector against the fake HTTP client serving tests/redfish/data/node1.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/time.h"
#include "engine/detect/oob_detectors.h"
#include "sources/redfish/fake_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {
namespace {

using Json = nlohmann::json;

constexpr char kSel[] = "/redfish/v1/Chassis/GPU1/LogServices/SEL/Entries";
constexpr char kSessions[] = "/redfish/v1/SessionService/Sessions";

class RedfishCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.ServeDirectory(std::string(FAULTLINE_SOURCE_DIR) + "/tests/redfish/data/node1");
    SetSelPage2({"3"});
    clock_.Set(*ParseIso8601("2025-03-01T16:00:00Z"));
  }
  void SetSelPage2(const std::vector<std::string>& ids) {
    Json members = Json::array();
    for (const auto& id : ids) members.push_back({{"@odata.id", std::string(kSel) + "/" + id}});
    fake_.Set("GET", std::string(kSel) + "?$skip=2", 200,
              Json{{"@odata.type", "#LogEntryCollection.LogEntryCollection"}, {"Members", members}}.dump());
  }
  RedfishClientOptions Options(AuthMode auth = AuthMode::kBasic) {
    RedfishClientOptions o;
    o.base_url = "https://bmc.test";
    o.credentials = {"admin", "hunter2"};
    o.auth = auth;
    o.backoff_ms = 1;
    return o;
  }
  int64_t Deadline() const { return clock_.MonotonicNs() + 60 * kNsPerSec; }
  static size_t Count(const SweepResult& r, ObsKind kind) {
    size_t n = 0;
    for (const auto& o : r.observations) n += o.kind == kind;
    return n;
  }
  static bool HasWarning(const SweepResult& r, const std::string& needle) {
    for (const auto& w : r.warnings) {
      if (w.find(needle) != std::string::npos) return true;
    }
    return false;
  }

  FakeHttpClient fake_;
  FakeClock clock_;
};

TEST_F(RedfishCollectorTest, SweepReadsEveryResourceKind) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {.node = "n1"});
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(Count(r, ObsKind::kPsuState), 4u);  // deprecated Power (2) + PowerSubsystem (2)
  EXPECT_EQ(Count(r, ObsKind::kCoolantTemp), 3u);
  EXPECT_EQ(Count(r, ObsKind::kCoolantFlow), 1u);
  EXPECT_EQ(Count(r, ObsKind::kPumpState), 1u);
  EXPECT_EQ(Count(r, ObsKind::kLeak), 1u);
  EXPECT_EQ(Count(r, ObsKind::kFanState), 2u);
  EXPECT_GE(Count(r, ObsKind::kTemperature), 3u);
  EXPECT_GE(Count(r, ObsKind::kVoltage), 5u);
  EXPECT_EQ(Count(r, ObsKind::kSelEntry), 3u);  // 2 on page 1, 1 on page 2; the journal is skipped
  EXPECT_GE(Count(r, ObsKind::kHealth), 2u);    // chassis condition + redundancy
  for (const auto& o : r.observations) {
    EXPECT_EQ(o.node, "n1");
    EXPECT_EQ(o.layer, Layer::kOob);
  }
  EXPECT_EQ(r.sse_uri, "/redfish/v1/EventService/SSE");
  EXPECT_EQ(r.sse_filter_properties, (std::vector<std::string>{"MessageId", "RegistryPrefix"}));
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis/GPU1/LogServices/Journal/Entries"), 0u);
  EXPECT_EQ(r.requests, fake_.requests().size());
  EXPECT_GT(r.resources, 30u);
}

TEST_F(RedfishCollectorTest, QuirksAreWarningsNotErrors) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {.node = "n1"});
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(HasWarning(r, "Members (null or absent) at /redfish/v1/Systems"));
  EXPECT_TRUE(HasWarning(r, "absent resource: /redfish/v1/Chassis/GPU1/EnvironmentMetrics"));
  EXPECT_TRUE(HasWarning(r, "non-standard DetectorState 'LeakDetected'"));
  EXPECT_TRUE(HasWarning(r, "non-object member"));
  EXPECT_TRUE(HasWarning(r, "unparseable timestamp '0000-00-00T00:00:00'"));
}

TEST_F(RedfishCollectorTest, ClockOffsetCorrectsLogTimes) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline());
  ASSERT_TRUE(r.bmc_offset_ns.has_value());
  EXPECT_EQ(*r.bmc_offset_ns, 300 * kNsPerSec);  // Manager DateTime 16:05 vs host 16:00
  for (const auto& o : r.observations) {
    if (o.kind == ObsKind::kSelEntry && o.attrs.at("entry_id") == "3") {
      EXPECT_EQ(o.attrs.at("raw_time"), "2025-03-01T16:10:00Z");
      EXPECT_EQ(o.time_ns, *ParseIso8601("2025-03-01T16:05:00Z"));
      EXPECT_EQ(o.attrs.at("oem_type"), "HPE IML");
    }
    if (o.kind == ObsKind::kSelEntry && o.attrs.at("entry_id") == "1") {
      EXPECT_EQ(o.time_ns, *ParseIso8601("2025-03-01T16:00:05Z") - 300 * kNsPerSec);  // -06:00 honoured
    }
  }
}

TEST_F(RedfishCollectorTest, LogsAreReadIncrementally) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  EXPECT_EQ(Count(collector.Sweep(Deadline()), ObsKind::kSelEntry), 3u);
  EXPECT_EQ(Count(collector.Sweep(Deadline()), ObsKind::kSelEntry), 0u);
  EXPECT_EQ(fake_.CountRequests("GET", std::string(kSel) + "/3"), 1u);  // not fetched again
  fake_.Set("GET", std::string(kSel) + "/4", 200,
            R"({"@odata.type":"#LogEntry.v1_9_0.LogEntry","Id":"4","EntryType":"SEL","SensorType":"Fan",
                "EntryCode":"Lower Critical - going low","Created":"2025-03-01T16:20:00Z"})");
  SetSelPage2({"3", "4"});
  SweepResult third = collector.Sweep(Deadline());
  ASSERT_EQ(Count(third, ObsKind::kSelEntry), 1u);
  EXPECT_EQ(collector.cursors().at(kSel).last_numeric_id, 4u);
}

TEST_F(RedfishCollectorTest, ClearedLogIsReadAgain) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  std::map<std::string, LogCursor> cursors;
  cursors[kSel].last_numeric_id = 500;
  collector.set_cursors(cursors);
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(HasWarning(r, "restarted its ids"));
  // Link-only entry 3 was skipped by the stale cursor; the expanded 1 and 2 are re-read.
  EXPECT_EQ(Count(r, ObsKind::kSelEntry), 2u);
}

TEST_F(RedfishCollectorTest, SessionAuthSendsTokenAndDeletesSession) {
  fake_.Set("POST", kSessions, 201, "{}",
            {{"x-auth-token", "tok-1"}, {"location", "/redfish/v1/SessionService/Sessions/77"}});
  {
    RedfishClient client(fake_, clock_, Options(AuthMode::kSession));
    ASSERT_TRUE(client.Login(Deadline()).ok());
    RedfishCollector collector(client, {});
    SweepResult r = collector.Sweep(Deadline());
    EXPECT_TRUE(r.errors.empty());
    for (const auto& req : fake_.requests()) {
      if (req.method != "GET") continue;
      bool has_token = false;
      for (const auto& [k, v] : req.headers) {
        has_token |= k == "X-Auth-Token" && v == "tok-1";
        EXPECT_NE(k, "Authorization");
      }
      EXPECT_TRUE(has_token) << req.url;
    }
    const auto post = fake_.requests().front();
    EXPECT_EQ(post.method, "POST");
    EXPECT_EQ(Json::parse(post.body)["UserName"], "admin");
  }  // destructor logs out
  EXPECT_EQ(fake_.CountRequests("DELETE", "/redfish/v1/SessionService/Sessions/77"), 1u);
}

TEST_F(RedfishCollectorTest, BasicFallbackWithoutSessionService) {
  RedfishClient client(fake_, clock_, Options(AuthMode::kSession));  // POST answers 404
  ASSERT_TRUE(client.Login(Deadline()).ok());
  EXPECT_EQ(client.effective_auth(), AuthMode::kBasic);
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(HasWarning(r, "falling back to Basic"));
  bool basic = false;
  const std::vector<HttpRequest> requests = fake_.requests();
  for (const auto& [k, v] : requests.back().headers) basic |= k == "Authorization" && v.rfind("Basic ", 0) == 0;
  EXPECT_TRUE(basic);
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("hunter2"), std::string::npos);
}

TEST_F(RedfishCollectorTest, SessionLimit503RetriesThenFallsBack) {
  fake_.Set("POST", kSessions, 503, R"({"error":{"code":"Base.1.0.SessionLimitExceeded"}})");
  RedfishClient client(fake_, clock_, Options(AuthMode::kSession));
  ASSERT_TRUE(client.Login(Deadline()).ok());
  EXPECT_EQ(fake_.CountRequests("POST", kSessions), 3u);
  EXPECT_EQ(client.effective_auth(), AuthMode::kBasic);
}

TEST_F(RedfishCollectorTest, BadCredentialsAreRefused) {
  fake_.Set("POST", kSessions, 401, "{}");
  RedfishClient client(fake_, clock_, Options(AuthMode::kSession));
  Status st = client.Login(Deadline());
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(st.message().find("hunter2"), std::string::npos);
}

TEST_F(RedfishCollectorTest, ExpiredSessionLogsInAgain) {
  std::atomic<int> posts{0};
  fake_.AddHandler([&](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    if (req.method == "POST") {
      int n = ++posts;
      return HttpResponse{
          201, {{"x-auth-token", "tok-" + std::to_string(n)}, {"location", "/s/" + std::to_string(n)}}, "{}"};
    }
    for (const auto& [k, v] : req.headers) {
      if (k == "X-Auth-Token" && v == "tok-1") return HttpResponse{401, {}, "{}"};
    }
    return std::nullopt;
  });
  RedfishClient client(fake_, clock_, Options(AuthMode::kSession));
  ASSERT_TRUE(client.Login(Deadline()).ok());
  auto root = client.Get("/redfish/v1", Deadline());
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(posts.load(), 2);
}

TEST_F(RedfishCollectorTest, ServerErrorsAreRetriedThenReported) {
  std::atomic<int> power_calls{0};
  fake_.AddHandler([&](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    if (FakeHttpClient::PathOf(req.url) == "/redfish/v1/Chassis/GPU1/Power" && ++power_calls <= 2) {
      return HttpResponse{500, {}, "{}"};
    }
    if (FakeHttpClient::PathOf(req.url) == "/redfish/v1/Chassis/GPU1/Thermal") return HttpResponse{503, {}, ""};
    return std::nullopt;
  });
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_EQ(power_calls.load(), 3);  // two 500s, then success
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("/redfish/v1/Chassis/GPU1/Thermal"), std::string::npos);
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis/GPU1/Thermal"), 3u);  // 1 + 2 retries
  EXPECT_EQ(Count(r, ObsKind::kLeak), 1u);                                        // the walk went on
}

TEST_F(RedfishCollectorTest, MalformedAndTruncatedBodiesAreErrors) {
  fake_.Set("GET", "/redfish/v1/Chassis/GPU1/Power", 200, R"({"@odata.type": "#Power.v1_7_1.Power", "Volt)");
  fake_.AddHandler([](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    if (FakeHttpClient::PathOf(req.url) == "/redfish/v1/Chassis/GPU1/Thermal") {
      return Result<HttpResponse>(Status(StatusCode::kCorrupt, "truncated body"));
    }
    return std::nullopt;
  });
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline());
  ASSERT_EQ(r.errors.size(), 2u);
  // Two requests are in flight, so the errors may arrive in either order.
  const bool malformed_first = r.errors[0].find("malformed JSON") != std::string::npos;
  EXPECT_NE(r.errors[malformed_first ? 0 : 1].find("malformed JSON"), std::string::npos);
  EXPECT_NE(r.errors[malformed_first ? 1 : 0].find("truncated body"), std::string::npos);
  EXPECT_EQ(Count(r, ObsKind::kPumpState), 1u);
}

TEST_F(RedfishCollectorTest, InFlightLimitIsRespected) {
  std::atomic<int> now{0}, peak{0};
  fake_.AddHandler([&](const HttpRequest&) -> std::optional<Result<HttpResponse>> {
    int n = ++now;
    int p = peak.load();
    while (n > p && !peak.compare_exchange_weak(p, n)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --now;
    return std::nullopt;
  });
  RedfishClientOptions o = Options();
  o.max_in_flight = 2;
  RedfishClient client(fake_, clock_, o);
  RedfishCollector collector(client, {.workers = 6});
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_LE(peak.load(), 2);
  EXPECT_EQ(peak.load(), 2);
}

TEST_F(RedfishCollectorTest, DeadlineStopsTheWalk) {
  SystemClock real;
  fake_.AddHandler([](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    (void)req;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::nullopt;
  });
  RedfishClient client(fake_, real, Options());
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(real.MonotonicNs() + 200 * kNsPerMs);
  EXPECT_GT(r.skipped, 0u);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.back().find("sweep deadline reached"), std::string::npos);
  for (const auto& req : fake_.requests()) EXPECT_LE(req.timeout_ms, 200);  // bounded by the deadline
}

TEST_F(RedfishCollectorTest, SweepFeedsTheOobDetectors) {
  RedfishClient client(fake_, clock_, Options());
  RedfishCollector collector(client, {});
  SweepResult r = collector.Sweep(Deadline());
  auto detectors = MakeOobDetectors();
  std::map<FaultClass, int> classes;
  for (const auto& o : r.observations) {
    for (auto& d : detectors) d->Observe(o);
  }
  for (auto& d : detectors) {
    for (const auto& f : d->Findings()) {
      classes[f.fault_class]++;
      EXPECT_NE(f.component.type, ComponentType::kGpu);
      EXPECT_TRUE(f.action == Action::kRma || f.action == Action::kFacilityTicket) << f.summary;
    }
  }
  EXPECT_GT(classes[FaultClass::kPowerSupply], 0);
  EXPECT_GT(classes[FaultClass::kPowerInsufficient], 0);  // 5600 W on one 3000 W PSU
  EXPECT_GT(classes[FaultClass::kCoolantLeak], 0);
  EXPECT_GT(classes[FaultClass::kThermalInlet], 0);  // the IML "Inlet Ambient" caution
}

}  // namespace
}  // namespace faultline::redfish
