// Issue 10 §5, reproduced against the fake HTTP client: credentials never leave the BMC's
// host, plain http is refused unless allowed, collections and logs are capped in total,
// absurd nesting is refused before parsing, and a stream that closes at once backs off.
#include <gtest/gtest.h>

#include <string>

#include "core/time.h"
#include "parse/redfish_map.h"
#include "sources/redfish/event_stream.h"
#include "sources/redfish/fake_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {
namespace {

using Json = nlohmann::json;

constexpr char kBmc[] = "https://bmc.test";
constexpr char kSessions[] = "/redfish/v1/SessionService/Sessions";

class RedfishSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.ServeDirectory(std::string(FAULTLINE_SOURCE_DIR) + "/tests/redfish/data/node1");
    fake_.Set("POST", kSessions, 201, "{}",
              {{"x-auth-token", "tok-secret"}, {"location", std::string(kSessions) + "/9"}});
  }
  RedfishClientOptions Options(AuthMode auth = AuthMode::kSession, std::string url = kBmc) {
    RedfishClientOptions o;
    o.base_url = std::move(url);
    o.credentials = {"admin", "hunter2"};
    o.auth = auth;
    o.backoff_ms = 1;
    o.retries = 0;
    return o;
  }
  int64_t Deadline() const { return clock_.MonotonicNs() + 60 * kNsPerSec; }
  // Every request that went anywhere but the BMC, and whether any carried a secret.
  std::vector<std::string> Foreign() const {
    std::vector<std::string> out;
    for (const auto& r : fake_.requests()) {
      auto origin = UrlOrigin(r.url);
      if (!origin.ok() || *origin != "https://bmc.test:443") out.push_back(r.method + " " + r.url);
    }
    return out;
  }
  static bool Has(const std::vector<std::string>& lines, const std::string& needle) {
    for (const auto& l : lines) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  void ServeCollection(const std::string& path, const Json& body) { fake_.Set("GET", path, 200, body.dump()); }

  FakeHttpClient fake_;
  FakeClock clock_{1'700'000'000 * kNsPerSec, 1000};
};

TEST(RedfishUrlOrigin, NormalisesAndRefusesTricks) {
  EXPECT_EQ(*UrlOrigin("https://BMC.test/redfish/v1"), "https://bmc.test:443");
  EXPECT_EQ(*UrlOrigin("https://bmc.test:443"), "https://bmc.test:443");
  EXPECT_EQ(*UrlOrigin("HTTP://bmc.test"), "http://bmc.test:80");
  EXPECT_EQ(*UrlOrigin("https://[::1]:8443/x"), "https://[::1]:8443");
  EXPECT_FALSE(UrlOrigin("https://bmc.test@evil.test/redfish/v1").ok());  // user info
  EXPECT_FALSE(UrlOrigin("https://bmc.test:44x3/").ok());
  EXPECT_FALSE(UrlOrigin("ftp://bmc.test/").ok());
  EXPECT_FALSE(UrlOrigin("https:///redfish").ok());
  EXPECT_FALSE(UrlOrigin("/redfish/v1").ok());
}

TEST_F(RedfishSecurityTest, AbsoluteLinksToAnotherHostAreRefused) {
  // The chassis collection links one member on the BMC, one elsewhere, one that downgrades
  // to http on the BMC's own name, and one that hides another host behind user info.
  ServeCollection("/redfish/v1/Chassis", {{"@odata.type", "#ChassisCollection.ChassisCollection"},
                                          {"Members",
                                           {{{"@odata.id", "https://bmc.test:443/redfish/v1/Chassis/GPU1"}},
                                            {{"@odata.id", "https://evil.test/redfish/v1/Chassis/X"}},
                                            {{"@odata.id", "http://bmc.test/redfish/v1/Chassis/Y"}},
                                            {{"@odata.id", "https://bmc.test@evil.test/redfish/v1/Chassis/Z"}}}},
                                          {"Members@odata.nextLink", "https://evil.test/redfish/v1/Chassis?$skip=4"}});
  for (AuthMode auth : {AuthMode::kSession, AuthMode::kBasic}) {
    RedfishClient client(fake_, clock_, Options(auth));
    ASSERT_TRUE(client.Login(Deadline()).ok());
    RedfishCollector collector(client, {.node = "n1"});
    SweepResult r = collector.Sweep(Deadline());
    EXPECT_TRUE(Foreign().empty()) << Foreign()[0];
    EXPECT_TRUE(Has(r.errors, "refusing to send BMC credentials to 'https://evil.test/redfish/v1/Chassis/X'"));
    EXPECT_TRUE(Has(r.errors, "http://bmc.test/redfish/v1/Chassis/Y"));
    EXPECT_TRUE(Has(r.errors, "evil.test/redfish/v1/Chassis?$skip=4"));
    EXPECT_TRUE(Has(r.errors, "Chassis/Z"));
    EXPECT_GE(r.observations.size(), 20u);  // the BMC's own chassis was read (absolute, same origin)
  }
}

TEST_F(RedfishSecurityTest, SessionLocationOnAnotherHostGetsNoToken) {
  fake_.Set("POST", kSessions, 201, "{}",
            {{"x-auth-token", "tok-secret"}, {"location", "https://evil.test/redfish/v1/SessionService/Sessions/9"}});
  {
    RedfishClient client(fake_, clock_, Options());
    ASSERT_TRUE(client.Login(Deadline()).ok());
    auto warnings = client.TakeWarnings();
    EXPECT_TRUE(Has(warnings, "session Location is not on the BMC's host")) << (warnings.empty() ? "" : warnings[0]);
  }  // destructor: Logout must not DELETE at evil.test
  EXPECT_TRUE(Foreign().empty()) << Foreign()[0];
  EXPECT_EQ(fake_.CountRequests("DELETE", "/redfish/v1/SessionService/Sessions/9"), 0u);
}

TEST_F(RedfishSecurityTest, SseUriOnAnotherHostIsRefusedAtOnce) {
  fake_.SetStream("/redfish/v1/EventService/SSE", {"data: {}\n\n"});
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  EventStreamOptions so;
  so.sse_uri = "https://evil.test/redfish/v1/EventService/SSE";
  int waits = 0;
  so.wait = [&](int64_t, const std::atomic<bool>&) { ++waits; };
  EventStream stream(client, so, MapContext{}, [](std::vector<Observation>) {});
  Status st = stream.Run();
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("evil.test"), std::string::npos);
  EXPECT_EQ(stream.connects(), 0u);
  EXPECT_EQ(waits, 0);
  EXPECT_TRUE(fake_.requests().empty());
}

TEST_F(RedfishSecurityTest, PlainHttpIsRefusedUnlessAllowed) {
  RedfishClient refused(fake_, clock_, Options(AuthMode::kSession, "http://bmc.test"));
  Status st = refused.Login(Deadline());
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("--allow-http"), std::string::npos);
  EXPECT_EQ(refused.Get("/redfish/v1", Deadline()).status().code(), StatusCode::kPermissionDenied);
  // A URL without a scheme would be plain http to curl: refused as unusable.
  RedfishClient bare(fake_, clock_, Options(AuthMode::kBasic, "bmc.test"));
  EXPECT_EQ(bare.Login(Deadline()).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fake_.requests().empty());

  RedfishClientOptions allowed = Options(AuthMode::kBasic, "http://bmc.test");
  allowed.allow_http = true;
  RedfishClient lab(fake_, clock_, allowed);
  ASSERT_TRUE(lab.Login(Deadline()).ok());
  EXPECT_TRUE(lab.Get("/redfish/v1", Deadline()).ok());
  EXPECT_TRUE(Has(lab.TakeWarnings(), "plain http to the BMC allowed"));
}

// Every page of /redfish/v1/Chassis lists 3 members and links a new, distinct next page:
// the visited set alone never stops it.
void ServeEndlessChassis(FakeHttpClient& fake) {
  fake.AddHandler([](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    const std::string path = FakeHttpClient::PathOf(req.url);
    if (path != "/redfish/v1/Chassis" && path.rfind("/redfish/v1/Chassis?", 0) != 0) return std::nullopt;
    const size_t q = path.find("$skip=");
    const int skip = q == std::string::npos ? 0 : std::stoi(path.substr(q + 6));
    Json members = Json::array();
    for (int i = 0; i < 3; ++i) members.push_back({{"@odata.id", "/redfish/v1/Chassis/C" + std::to_string(skip + i)}});
    Json page{{"@odata.type", "#ChassisCollection.ChassisCollection"},
              {"Members", members},
              {"Members@odata.nextLink", "/redfish/v1/Chassis?$skip=" + std::to_string(skip + 3)}};
    return Result<HttpResponse>(HttpResponse{200, {}, page.dump()});
  });
}

TEST_F(RedfishSecurityTest, EndlessCollectionPagesAreCappedInTotal) {
  ServeEndlessChassis(fake_);
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  CollectorOptions co{.node = "n1"};
  co.max_collection_pages = 5;
  RedfishCollector collector(client, co);
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(Has(r.errors, "max_collection_pages=5")) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis?$skip=12"), 1u);  // page 5
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis?$skip=15"), 0u);
}

TEST_F(RedfishSecurityTest, MembersAreCappedAcrossPages) {
  ServeEndlessChassis(fake_);
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  CollectorOptions co{.node = "n1"};
  co.max_members = 7;
  RedfishCollector collector(client, co);
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(Has(r.errors, "max_members=7")) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis?$skip=6"), 1u);  // holds members 7..9
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis?$skip=9"), 0u);
  EXPECT_EQ(fake_.CountRequests("GET", "/redfish/v1/Chassis/C7"), 0u);  // the 8th member is not fetched
}

TEST_F(RedfishSecurityTest, RequestsPerSweepAreCapped) {
  ServeEndlessChassis(fake_);
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  CollectorOptions co{.node = "n1"};
  co.max_collection_pages = 100'000;
  co.max_members = 100'000;
  co.max_resources = 40;
  RedfishCollector collector(client, co);
  SweepResult r = collector.Sweep(Deadline());
  EXPECT_TRUE(Has(r.errors, "max_resources=40")) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_LE(r.requests, 40u + 3u);  // plus phase 1: the root, Managers and the manager
}

TEST_F(RedfishSecurityTest, LogEntriesAreCappedAcrossPages) {
  const std::string log = "/redfish/v1/Chassis/GPU1/LogServices/SEL/Entries";
  fake_.AddHandler([log](const HttpRequest& req) -> std::optional<Result<HttpResponse>> {
    const std::string path = FakeHttpClient::PathOf(req.url);
    if (path.rfind(log, 0) != 0 || path.size() > log.size() + 20 || path.find("/Entries/") != std::string::npos) {
      return std::nullopt;
    }
    const size_t q = path.find("$skip=");
    const int skip = q == std::string::npos ? 0 : std::stoi(path.substr(q + 6));
    Json members = Json::array();
    for (int i = 1; i <= 4; ++i) {
      members.push_back({{"@odata.id", log + "/" + std::to_string(skip + i)},
                         {"Id", std::to_string(skip + i)},
                         {"EntryType", "SEL"},
                         {"Created", "2025-03-01T10:00:00Z"},
                         {"Message", "entry"}});
    }
    Json page{{"@odata.type", "#LogEntryCollection.LogEntryCollection"},
              {"Members", members},
              {"Members@odata.nextLink", log + "?$skip=" + std::to_string(skip + 4)}};
    return Result<HttpResponse>(HttpResponse{200, {}, page.dump()});
  });
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  CollectorOptions co{.node = "n1"};
  co.max_log_entries = 10;
  RedfishCollector collector(client, co);
  SweepResult r = collector.Sweep(Deadline());
  size_t entries = 0;
  for (const auto& o : r.observations) entries += o.kind == ObsKind::kSelEntry;
  EXPECT_EQ(entries, 10u);
  EXPECT_TRUE(Has(r.warnings, "max_log_entries=10"));
  EXPECT_EQ(fake_.CountRequests("GET", log + "?$skip=12"), 0u);

  co.max_log_entries = 1000;
  co.max_log_pages = 3;
  RedfishCollector paged(client, co);
  SweepResult p = paged.Sweep(Deadline());
  EXPECT_TRUE(Has(p.warnings, "max_log_pages=3"));
}

TEST_F(RedfishSecurityTest, AbsurdNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  fake_.Set("GET", "/redfish/v1/Chassis/GPU1/Thermal", 200, "{\"a\":" + deep + "}");
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  RedfishCollector collector(client, {.node = "n1"});
  SweepResult r = collector.Sweep(Deadline());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("nested 100001 levels deep"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find("/Thermal"), std::string::npos);

  EXPECT_EQ(ParseBmcJson(deep).status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(ParseBmcJson(std::string(64, '[') + std::string(64, ']')).ok());
  EXPECT_FALSE(ParseBmcJson(std::string(65, '[') + std::string(65, ']')).ok());
  EXPECT_TRUE(ParseBmcJson(R"({"s":")" + std::string(1000, '[') + R"("})").ok());  // brackets in a string
  EXPECT_EQ(ParseBmcJson("{\"a\":").status().code(), StatusCode::kCorrupt);        // truncated
}

TEST_F(RedfishSecurityTest, StreamThatClosesAtOnceBacksOffExponentiallyAndCapped) {
  fake_.SetStream("/redfish/v1/EventService/SSE", {}, 200);  // accepts, then closes with no event
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  EventStreamOptions so;
  so.sse_uri = "/redfish/v1/EventService/SSE";
  so.max_failures = 7;
  so.reconnect_backoff_ms = 1'000;
  so.max_reconnect_backoff_ms = 8'000;
  std::vector<int64_t> waits;
  so.wait = [&](int64_t ms, const std::atomic<bool>&) {
    waits.push_back(ms);
    clock_.Advance(ms * kNsPerMs);  // simulated time: the test never sleeps
  };
  EventStream stream(client, so, MapContext{}, [](std::vector<Observation>) {});
  Status st = stream.Run();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("closed at once"), std::string::npos) << st.message();
  EXPECT_EQ(stream.connects(), 7u);
  EXPECT_EQ(waits, (std::vector<int64_t>{1'000, 2'000, 4'000, 8'000, 8'000, 8'000}));
  // Restarted after giving up (the agent does that every sweep): it waits first.
  waits.clear();
  (void)stream.Run();
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits.front(), 8'000);
}

TEST_F(RedfishSecurityTest, HealthyStreamResetsTheBackOff) {
  // Two connections that deliver an event then end, then the stream refuses (500).
  std::atomic<int> n{0};
  fake_.SetStream("/redfish/v1/EventService/SSE",
                  {"id: 1\ndata: {\"@odata.type\":\"#Event.v1_7_0.Event\",\"Events\":[{\"MessageId\":"
                   "\"Power.1.0.PowerSupplyFailed\",\"MessageArgs\":[\"PSU2\"]}]}\n\n"});
  RedfishClient client(fake_, clock_, Options(AuthMode::kBasic));
  EventStreamOptions so;
  so.sse_uri = "/redfish/v1/EventService/SSE";
  so.max_failures = 2;
  std::vector<int64_t> waits;
  so.wait = [&](int64_t ms, const std::atomic<bool>&) { waits.push_back(ms); };
  EventStream stream(client, so, MapContext{}, [&](std::vector<Observation>) {
    if (++n == 2) fake_.SetStream("/redfish/v1/EventService/SSE", {}, 500);
  });
  Status st = stream.Run();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(stream.events(), 2u);
  EXPECT_EQ(waits, (std::vector<int64_t>{1'000}));  // no wait after the good ones; one before the last try
}

}  // namespace
}  // namespace faultline::redfish
