// Vendor-shaped healthy nodes (tests/redfish/data/vendor-*, written for this test in the
// shapes different BMC families use) served by the mock BMC over HTTPS on loopback, swept
// by the real client and fed to the OOB detectors: nothing above a monitor-level note.
// Then the inverse: the same trees with one real fault set through the mock BMC still
// give the right finding on the right part.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/time.h"
#include "engine/detect/oob_detectors.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {
namespace {

struct Swept {
  SweepResult sweep;
  std::vector<Finding> findings;
};

class VendorTreeTest : public ::testing::TestWithParam<const char*> {
 protected:
  void Start(const std::string& tree) {
    sim::MockBmcOptions o;
    o.mockup_dir = std::string(FAULTLINE_SOURCE_DIR) + "/tests/redfish/data/" + tree;
    auto bmc = sim::MockBmc::Start(o);
    ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
    bmc_ = std::move(*bmc);
  }

  Swept Sweep() {
    CurlOptions tls;
    tls.ca_file = bmc_->ca_cert_path();
    CurlHttpClient http(tls);
    RedfishClientOptions co;
    co.base_url = bmc_->base_url();
    co.credentials = {"admin", "mockpassword"};
    RedfishClient client(http, clock_, co);
    Swept out;
    Status login = client.Login(clock_.MonotonicNs() + 30 * kNsPerSec);
    if (!login.ok()) {
      out.sweep.errors.push_back("login: " + login.message());
      return out;
    }
    RedfishCollector collector(client, {.node = "n1"});
    out.sweep = collector.Sweep(clock_.MonotonicNs() + 60 * kNsPerSec);
    for (auto& d : MakeOobDetectors()) {
      for (const auto& ob : out.sweep.observations) d->Observe(ob);
      for (auto& f : d->Findings()) out.findings.push_back(std::move(f));
    }
    return out;
  }

  void Set(const std::string& resource, const std::string& pointer, const std::string& json) {
    Status st = bmc_->SetValue(resource, pointer, json);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  static std::string Describe(const std::vector<Finding>& fs) {
    std::string s;
    for (const auto& f : fs) {
      s += std::string(ToString(f.fault_class)) + " " + f.component.Id() + " " + std::string(ToString(f.action)) + " " +
           std::string(ToString(f.severity)) + ": " + f.summary + "\n";
    }
    return s;
  }
  static std::vector<Finding> Disruptive(const std::vector<Finding>& fs) {
    std::vector<Finding> out;
    for (const auto& f : fs) {
      if (f.action > Action::kMonitor) out.push_back(f);
    }
    return out;
  }
  static std::vector<Finding> Open(const std::vector<Finding>& fs, FaultClass fc) {
    std::vector<Finding> out;
    for (const auto& f : fs) {
      auto st = f.attrs.find("state");
      if (f.fault_class == fc && st != f.attrs.end() && st->second == "open") out.push_back(f);
    }
    return out;
  }
  static size_t Count(const SweepResult& r, ObsKind kind) {
    return static_cast<size_t>(
        std::count_if(r.observations.begin(), r.observations.end(), [&](const auto& o) { return o.kind == kind; }));
  }
  static size_t Warnings(const SweepResult& r, const std::string& needle) {
    return static_cast<size_t>(std::count_if(r.warnings.begin(), r.warnings.end(),
                                             [&](const auto& w) { return w.find(needle) != std::string::npos; }));
  }

  SystemClock clock_;
  std::unique_ptr<sim::MockBmc> bmc_;
};

TEST_P(VendorTreeTest, HealthyNodeHasNoDisruptiveFinding) {
  Start(GetParam());
  Swept s = Sweep();
  EXPECT_TRUE(s.sweep.errors.empty()) << s.sweep.errors[0];
  EXPECT_GE(Count(s.sweep, ObsKind::kPsuState), 2u);  // the tree was walked...
  EXPECT_GE(Count(s.sweep, ObsKind::kTemperature), 3u);
  EXPECT_GE(Count(s.sweep, ObsKind::kSelEntry) + Count(s.sweep, ObsKind::kLeak), 1u);
  EXPECT_TRUE(Disruptive(s.findings).empty()) << Describe(Disruptive(s.findings));  // ...and nothing alarms
}

INSTANTIATE_TEST_SUITE_P(Vendors, VendorTreeTest,
                         ::testing::Values("vendor-dell-like", "vendor-supermicro-like", "vendor-hpe-like",
                                           "vendor-liquid-cooled"));

class VendorFaultTest : public VendorTreeTest {};

constexpr char kDellPower[] = "/redfish/v1/Chassis/System.Embedded.1/Power";
constexpr char kDellThermal[] = "/redfish/v1/Chassis/System.Embedded.1/Thermal";

TEST_F(VendorFaultTest, DellLikeEmptyBaysAreNotFailuresButAFailedSupplyIs) {
  Start("vendor-dell-like");
  Swept healthy = Sweep();
  size_t absent = 0;
  for (const auto& o : healthy.sweep.observations) {
    absent += o.kind == ObsKind::kPsuState && o.attrs.count("present") && o.attrs.at("present") == "false";
  }
  EXPECT_EQ(absent, 2u);  // bays 3 and 4: Absent with Warning / Critical health
  EXPECT_TRUE(healthy.findings.empty()) << Describe(healthy.findings);

  Set(kDellPower, "/PowerSupplies/1/Status/Health", "\"Critical\"");
  Swept failed = Sweep();
  auto f = Open(failed.findings, FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u) << Describe(failed.findings);
  EXPECT_EQ(f[0].component.Id(), "psu/PS2_Status");
  EXPECT_EQ(f[0].action, Action::kRma);
  EXPECT_EQ(f[0].component.keys.at("serial"), "CNDELL001");
}

TEST_F(VendorFaultTest, DellLikeHotInletIsAFacilityTicket) {
  Start("vendor-dell-like");
  Set(kDellThermal, "/Temperatures/0/ReadingCelsius", "48");
  Set(kDellThermal, "/Temperatures/0/Status/Health", "\"Critical\"");
  Swept s = Sweep();
  auto f = Open(s.findings, FaultClass::kThermalInlet);
  ASSERT_EQ(f.size(), 1u) << Describe(s.findings);
  EXPECT_EQ(f[0].component.Id(), "sensor/System_Board_Inlet_Temp");
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
}

TEST_F(VendorFaultTest, SupermicroLikeQuirksAreWarningsAndRealLossStillCounts) {
  Start("vendor-supermicro-like");
  Swept healthy = Sweep();
  // 0.2 V and 6553.5 V inputs on healthy supplies, a 12000 "V" rail, 2750 C, 65535 RPM.
  EXPECT_EQ(Warnings(healthy.sweep, "vendor quirk"), 5u);
  // The warm intake sensor without thresholds is a note; PSU and CPU sensors are not inlets.
  auto notes = Open(healthy.findings, FaultClass::kThermalInlet);
  ASSERT_EQ(notes.size(), 1u) << Describe(healthy.findings);
  EXPECT_EQ(notes[0].component.Id(), "sensor/Ambient_Temp");
  EXPECT_EQ(notes[0].action, Action::kMonitor);

  // The supply whose meter read 0.2 V really loses its input: now it is a power fault.
  Set("/redfish/v1/Chassis/1/Power", "/PowerSupplies/0/Status/Health", "\"Critical\"");
  Set("/redfish/v1/Chassis/1/Power", "/PowerSupplies/0/LineInputVoltage", "0");
  Swept lost = Sweep();
  auto v = Open(lost.findings, FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(v.size(), 1u) << Describe(lost.findings);
  EXPECT_EQ(v[0].component.Id(), "psu/Power_Supply_Bay_1");
  EXPECT_EQ(v[0].action, Action::kFacilityTicket);
  EXPECT_EQ(Open(lost.findings, FaultClass::kPowerSupply).size(), 1u);
}

TEST_F(VendorFaultTest, SupermicroLikeInletWithOwnThresholdsStillFires) {
  Start("vendor-supermicro-like");
  Set("/redfish/v1/Chassis/1/Sensors/Inlet_Temp", "/Reading", "46");
  Swept s = Sweep();
  bool critical = false;
  for (const auto& f : Open(s.findings, FaultClass::kThermalInlet)) {
    critical |= f.component.Id() == "sensor/Inlet_Temp" && f.severity == Severity::kCritical &&
                f.action == Action::kFacilityTicket;
  }
  EXPECT_TRUE(critical) << Describe(s.findings);
}

TEST_F(VendorFaultTest, HpeLikeSameNamedSuppliesAreTwoParts) {
  Start("vendor-hpe-like");
  Swept healthy = Sweep();
  std::set<std::string> psus;
  for (const auto& o : healthy.sweep.observations) {
    if (o.kind == ObsKind::kPsuState) psus.insert(o.component.Id());
  }
  EXPECT_EQ(psus, (std::set<std::string>{"psu/HpeServerPowerSupply_0", "psu/HpeServerPowerSupply_1"}));
  // The first supply fails; the second, same Name, healthy, read after it in the same
  // sweep, must not clear it.
  Set("/redfish/v1/Chassis/1/Power", "/PowerSupplies/0/Status/Health", "\"Critical\"");
  Swept failed = Sweep();
  auto f = Open(failed.findings, FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u) << Describe(failed.findings);
  EXPECT_EQ(f[0].component.keys.at("serial"), "5WBXT0B4DAN0AB");
  EXPECT_EQ(f[0].action, Action::kRma);
}

TEST_F(VendorFaultTest, LiquidCooledLeakAndHotIntake) {
  Start("vendor-liquid-cooled");
  const std::string c = "/redfish/v1/Chassis/HGX_Chassis_0";
  Set(c + "/ThermalSubsystem/LeakDetection/LeakDetectors/Tray_0", "/DetectorState", "\"Critical\"");
  // The BMC reports the intake in three places; all say the same.
  Set(c + "/Sensors/Inlet_Temp", "/Reading", "41");
  Set(c + "/ThermalSubsystem/ThermalMetrics", "/TemperatureReadingsCelsius/0/Reading", "41");
  Set(c + "/ThermalSubsystem/ThermalMetrics", "/TemperatureSummaryCelsius/Intake/Reading", "41");
  Swept s = Sweep();
  auto leak = Open(s.findings, FaultClass::kCoolantLeak);
  ASSERT_EQ(leak.size(), 1u) << Describe(s.findings);
  EXPECT_EQ(leak[0].component.Id(), "coolant/leak-Tray_0");
  // The sensor by its own thresholds (critical), the summary by the default limit.
  bool sensor_critical = false;
  for (const auto& f : Open(s.findings, FaultClass::kThermalInlet)) {
    sensor_critical |= f.component.Id() == "sensor/Inlet_Temp" && f.severity == Severity::kCritical;
    EXPECT_EQ(f.action, Action::kFacilityTicket);
  }
  EXPECT_TRUE(sensor_critical) << Describe(s.findings);
}

TEST_F(VendorFaultTest, LiquidCooledSupplyPulledFromItsBayIsANote) {
  Start("vendor-liquid-cooled");
  const std::string psu = "/redfish/v1/Chassis/HGX_Chassis_0/PowerSubsystem/PowerSupplies/PSU2";
  CurlOptions tls;
  tls.ca_file = bmc_->ca_cert_path();
  CurlHttpClient http(tls);
  RedfishClientOptions co;
  co.base_url = bmc_->base_url();
  co.credentials = {"admin", "mockpassword"};
  RedfishClient client(http, clock_, co);
  ASSERT_TRUE(client.Login(clock_.MonotonicNs() + 30 * kNsPerSec).ok());
  RedfishCollector collector(client, {.node = "n1"});
  auto detectors = MakeOobDetectors();
  for (int sweep = 0; sweep < 2; ++sweep) {
    if (sweep == 1) Set(psu, "/Status", R"({"State":"Absent","Health":"Warning"})");
    SweepResult r = collector.Sweep(clock_.MonotonicNs() + 60 * kNsPerSec);
    ASSERT_TRUE(r.errors.empty()) << r.errors[0];
    for (auto& d : detectors) {
      for (const auto& o : r.observations) d->Observe(o);
    }
  }
  std::vector<Finding> all;
  for (auto& d : detectors) {
    for (auto& f : d->Findings()) all.push_back(std::move(f));
  }
  auto removed = Open(all, FaultClass::kPowerSupply);
  ASSERT_EQ(removed.size(), 1u) << Describe(all);
  EXPECT_EQ(removed[0].component.Id(), "psu/PSU2");
  EXPECT_EQ(removed[0].action, Action::kMonitor);
  EXPECT_TRUE(Disruptive(all).empty()) << Describe(all);
}

}  // namespace
}  // namespace faultline::redfish
