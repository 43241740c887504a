// Conformance: the client walks every DMTF public mockup served by the mock BMC with
// zero errors and the expected counts. Skipped when ../shared is absent.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/time.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {
namespace {

namespace fs = std::filesystem;

// Counted from the mockup files (resources reachable through the links the collector
// follows): Sensor resources with a numeric Reading, PowerSupply resources plus
// deprecated Power.PowerSupplies members, Fan resources plus deprecated Thermal.Fans
// members, LeakDetector resources, and LogEntry members of hardware logs.
struct Expected {
  const char* mockup;
  size_t sensors, psus, fans, leak_detectors, log_entries;
};

constexpr Expected kExpected[] = {
#include "conformance_counts.inc"
};

std::string MockupRoot() { return std::string(FAULTLINE_SOURCE_DIR) + "/../shared/fixtures/redfish/dmtf-mockups"; }

size_t CountKind(const SweepResult& r, ObsKind kind, const std::string& only_component_type = "") {
  size_t n = 0;
  for (const auto& o : r.observations) {
    if (o.kind != kind) continue;
    if (!only_component_type.empty() && std::string(ToString(o.component.type)) != only_component_type) continue;
    ++n;
  }
  return n;
}

size_t SensorResources(const SweepResult& r) {
  size_t n = 0;
  for (const auto& o : r.observations) {
    auto uri = o.component.keys.find("uri");
    n += o.component.type == ComponentType::kSensor && o.kind != ObsKind::kHealth && uri != o.component.keys.end() &&
         uri->second.find("/Sensors/") != std::string::npos;
  }
  return n;
}

TEST(RedfishConformance, EveryDmtfMockupWalksCleanly) {
  if (!fs::exists(MockupRoot())) GTEST_SKIP() << "no ../shared fixtures";
  SystemClock clock;
  for (const Expected& want : kExpected) {
    SCOPED_TRACE(want.mockup);
    sim::MockBmcOptions o;
    o.mockup_dir = MockupRoot() + "/" + want.mockup;
    auto bmc = sim::MockBmc::Start(o);
    ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
    CurlOptions tls;
    tls.ca_file = (*bmc)->ca_cert_path();
    CurlHttpClient http(tls);
    RedfishClientOptions co;
    co.base_url = (*bmc)->base_url();
    co.credentials = {"admin", "mockpassword"};
    co.auth = AuthMode::kSession;
    RedfishClient client(http, clock, co);
    ASSERT_TRUE(client.Login(clock.MonotonicNs() + 30 * kNsPerSec).ok());
    RedfishCollector collector(client, {.node = want.mockup});
    SweepResult r = collector.Sweep(clock.MonotonicNs() + 60 * kNsPerSec);
    EXPECT_TRUE(r.errors.empty()) << r.errors[0];
    EXPECT_EQ(SensorResources(r), want.sensors);
    EXPECT_EQ(CountKind(r, ObsKind::kPsuState), want.psus);
    EXPECT_EQ(CountKind(r, ObsKind::kFanState), want.fans);
    EXPECT_EQ(CountKind(r, ObsKind::kLeak), want.leak_detectors);
    EXPECT_EQ(CountKind(r, ObsKind::kSelEntry), want.log_entries);
    for (const auto& ob : r.observations) EXPECT_EQ(ob.layer, Layer::kOob);
  }
}

}  // namespace
}  // namespace faultline::redfish
