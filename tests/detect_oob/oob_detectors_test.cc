#include "engine/detect/oob_detectors.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engine/detect/oob_sensor_class.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1'700'000'000 * kNsPerSec;

Observation Obs(ObsKind kind, ComponentRef c, std::optional<double> value, std::map<std::string, std::string> attrs,
                int64_t t = kT0) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kOob;
  o.source = Source::kRedfish;
  o.kind = kind;
  o.component = std::move(c);
  o.value = value;
  o.attrs = std::move(attrs);
  return o;
}

ComponentRef Psu(const std::string& n) { return {ComponentType::kPsu, n, {}}; }
ComponentRef Chassis() { return {ComponentType::kChassis, "1U", {}}; }
ComponentRef Sensor(const std::string& n) { return {ComponentType::kSensor, n, {}}; }

std::vector<Finding> Of(const std::vector<Finding>& all, FaultClass fc) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.fault_class == fc) out.push_back(f);
  }
  return out;
}

TEST(OobDetect, FailedPsuIsAPartRma) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 2, {{"health", "Critical"}, {"state", "Enabled"}}));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].component.Id(), "psu/PSU2");
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].action, Action::kRma);
  EXPECT_EQ(f[0].layer, Layer::kOob);
  EXPECT_EQ(f[0].evidence.size(), 1u);
}

TEST(OobDetect, PsuInputLossIsAFacilityTicket) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"line_input", "LossOfInput"}}));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
}

TEST(OobDetect, PredictiveFailureIsAWarningAndRecoveryClears) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 1, {{"health", "Warning"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}}, kT0 + 60 * kNsPerSec));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].attrs.at("state"), "cleared");
  EXPECT_EQ(f[0].last_ns, kT0 + 60 * kNsPerSec);
}

TEST(OobDetect, StandbyPsuWithGoodHealthIsTolerated) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"state", "Standby"}}));
  EXPECT_TRUE(d->Findings().empty());
}

TEST(OobDetect, VoltageOutsideThresholds) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kVoltage, Sensor("P12V"), 10.5,
                 {{"lower_noncritical", "11.4"}, {"lower_critical", "10.8"}, {"upper_critical", "13.2"}}));
  auto f = Of(d->Findings(), FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].action, Action::kRma);
  d->Observe(Obs(ObsKind::kVoltage, Sensor("P12V"), 12.0, {{"lower_noncritical", "11.4"}, {"lower_critical", "10.8"}},
                 kT0 + kNsPerSec));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kVoltageOutOfRange)[0].attrs.at("state"), "cleared");
}

TEST(OobDetect, InputVoltageSagWithoutThresholds) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 230, {{"role", "input"}}));
  EXPECT_TRUE(d->Findings().empty());
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 196, {{"role", "input"}}, kT0 + kNsPerSec));
  auto f = Of(d->Findings(), FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 60, {{"role", "input"}}, kT0 + 2 * kNsPerSec));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kVoltageOutOfRange)[0].severity, Severity::kCritical);
}

TEST(OobDetect, PowerNearCapacityOnlyWithPsuLoss) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPowerCapacity, Psu("PSU1"), 3000, {}));
  d->Observe(Obs(ObsKind::kPowerCapacity, Psu("PSU2"), 3000, {}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}}));
  d->Observe(Obs(ObsKind::kPower, Chassis(), 5600, {}));
  EXPECT_TRUE(Of(d->Findings(), FaultClass::kPowerInsufficient).empty());  // 5600 of 6000 W, both PSUs fine
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 2, {{"health", "Critical"}}, kT0 + kNsPerSec));
  auto f = Of(d->Findings(), FaultClass::kPowerInsufficient);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
  EXPECT_EQ(f[0].attrs.at("state"), "open");
  d->Observe(Obs(ObsKind::kPower, Chassis(), 1500, {}, kT0 + 2 * kNsPerSec));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kPowerInsufficient)[0].attrs.at("state"), "cleared");
}

TEST(OobDetect, PowerRedundancyLost) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kHealth, Chassis(), 2, {{"scope", "power"}, {"health", "Critical"}}));
  d->Observe(Obs(ObsKind::kHealth, Chassis(), 2, {{"scope", "cooling"}, {"health", "Critical"}}));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("redundancy"), std::string::npos);
}

TEST(OobDetect, RedundancyLostWithEveryPsuHealthyIsInsufficientPower) {
  // Four healthy PSUs, and the BMC says redundancy is gone: the load outgrew them.
  auto d = MakeOobPowerDetector({});
  for (const char* id : {"PSU1", "PSU2", "PSU3", "PSU4"}) {
    d->Observe(Obs(ObsKind::kPsuState, Psu(id), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  }
  d->Observe(Obs(ObsKind::kHealth, Chassis(), 2, {{"scope", "power"}, {"health", "Critical"}}, kT0 + kNsPerSec));
  EXPECT_TRUE(Of(d->Findings(), FaultClass::kPowerSupply).empty());
  auto f = Of(d->Findings(), FaultClass::kPowerInsufficient);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
  // Once a PSU has failed, lost redundancy is that PSU's doing.
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 2, {{"health", "Critical"}}, kT0 + 2 * kNsPerSec));
  d->Observe(Obs(ObsKind::kHealth, Chassis(), 2, {{"scope", "power"}, {"health", "Critical"}}, kT0 + 3 * kNsPerSec));
  EXPECT_FALSE(Of(d->Findings(), FaultClass::kPowerSupply).empty());
}

TEST(OobDetect, InletAboveThresholdsWithHysteresis) {
  auto d = MakeOobThermalDetector({});
  auto inlet = [&](double t, int64_t at) {
    d->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet"), t,
                   {{"physical_context", "Intake"}, {"upper_noncritical", "35"}, {"upper_critical", "40"}}, at));
  };
  inlet(30, kT0);
  EXPECT_TRUE(d->Findings().empty());
  inlet(36, kT0 + 1);
  inlet(41, kT0 + 2);
  auto f = Of(d->Findings(), FaultClass::kThermalInlet);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].action, Action::kFacilityTicket);
  inlet(34.5, kT0 + 3);  // within hysteresis: still open
  EXPECT_EQ(Of(d->Findings(), FaultClass::kThermalInlet)[0].attrs.at("state"), "open");
  inlet(33, kT0 + 4);
  EXPECT_EQ(Of(d->Findings(), FaultClass::kThermalInlet)[0].attrs.at("state"), "cleared");
}

TEST(OobDetect, CpuTemperatureIsNotInlet) {
  auto d = MakeOobThermalDetector({});
  d->Observe(Obs(ObsKind::kTemperature, Sensor("CPU1"), 95, {{"physical_context", "CPU"}, {"upper_critical", "90"}}));
  EXPECT_TRUE(d->Findings().empty());
}

TEST(OobDetect, InletWithoutThresholdsUsesDefault) {
  OobOptions o;
  o.inlet_max_c = 32;
  auto d = MakeOobThermalDetector(o);
  d->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet_Temp"), 33, {}));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kThermalInlet).size(), 1u);
}

TEST(OobDetect, FailedFanIsRmaPumpIsFacility) {
  auto d = MakeOobThermalDetector({});
  d->Observe(Obs(ObsKind::kFanState, {ComponentType::kFan, "Fan3", {}}, 2, {{"health", "Critical"}}));
  d->Observe(Obs(ObsKind::kPumpState, {ComponentType::kCoolant, "pump-1", {}}, 2, {{"health", "Critical"}}));
  auto f = Of(d->Findings(), FaultClass::kCoolingDegraded);
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) {
    EXPECT_EQ(x.action, x.component.type == ComponentType::kFan ? Action::kRma : Action::kFacilityTicket);
  }
}

TEST(OobDetect, CoolantReturnRisingWithinWindow) {
  auto d = MakeOobThermalDetector({});
  ComponentRef loop{ComponentType::kCoolant, "Loop1", {}};
  for (int i = 0; i <= 6; ++i) {
    d->Observe(Obs(ObsKind::kCoolantTemp, loop, 40 + i, {{"point", "return"}}, kT0 + i * 60 * kNsPerSec));
  }
  auto f = Of(d->Findings(), FaultClass::kCoolingDegraded);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].first_ns, kT0 + 5 * 60 * kNsPerSec);  // +5 C reached at minute 5
  // Supply readings are not a rise signal.
  auto d2 = MakeOobThermalDetector({});
  for (int i = 0; i <= 6; ++i) {
    d2->Observe(Obs(ObsKind::kCoolantTemp, loop, 20 + 2 * i, {{"point", "supply"}}, kT0 + i * 60 * kNsPerSec));
  }
  EXPECT_TRUE(d2->Findings().empty());
}

TEST(OobDetect, SlowCoolantDriftOutsideWindowIsIgnored) {
  auto d = MakeOobThermalDetector({});
  ComponentRef loop{ComponentType::kCoolant, "Loop1", {}};
  for (int i = 0; i <= 10; ++i) {  // +1 C per 10 minutes
    d->Observe(Obs(ObsKind::kCoolantTemp, loop, 40 + i, {{"point", "return"}}, kT0 + i * 600 * kNsPerSec));
  }
  EXPECT_TRUE(d->Findings().empty());
}

TEST(OobDetect, LeakOpensAndCloses) {
  auto d = MakeOobThermalDetector({});
  ComponentRef det{ComponentType::kCoolant, "leak-Tray", {}};
  d->Observe(Obs(ObsKind::kLeak, det, 2, {{"detector_state", "Critical"}}));
  auto f = Of(d->Findings(), FaultClass::kCoolantLeak);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  d->Observe(Obs(ObsKind::kLeak, det, 0, {{"detector_state", "OK"}}, kT0 + kNsPerSec));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kCoolantLeak)[0].attrs.at("state"), "cleared");
}

Observation Sel(const std::string& sensor_type, const std::string& code, std::map<std::string, std::string> more = {},
                int64_t t = kT0) {
  more["sensor_type"] = sensor_type;
  more["entry_code"] = code;
  return Obs(ObsKind::kSelEntry, Chassis(), std::nullopt, more, t);
}

TEST(OobDetect, SelClassifiedBySensorTypeAndEntryCode) {
  auto d = MakeOobEventDetector({});
  d->Observe(Sel("Power Supply / Converter", "Failure detected", {{"sensor", "PS2 Status"}}));
  d->Observe(Sel("Voltage", "Lower Critical - going low", {{"sensor", "P12V"}}));
  d->Observe(Sel("Fan", "Lower Non-critical - going low", {{"sensor", "FAN4"}}));
  d->Observe(Sel("Cooling Device", "Transition to Critical from less severe", {{"sensor", "CDU"}}));
  d->Observe(Sel("Power Unit", "Redundancy Lost", {{"sensor", "PSU Redundancy"}}));
  d->Observe(Sel("Temperature", "Upper Critical - going high", {{"sensor", "Inlet Temp"}}));
  d->Observe(Sel("Memory", "Correctable ECC", {{"sensor", "DIMM1"}}));        // not layer-1 physical
  d->Observe(Sel("Power Supply", "Presence detected", {{"sensor", "PS1"}}));  // informational
  auto all = d->Findings();
  EXPECT_EQ(all.size(), 6u);
  auto psu = Of(all, FaultClass::kPowerSupply);
  ASSERT_EQ(psu.size(), 2u);
  auto fan = Of(all, FaultClass::kCoolingDegraded);
  ASSERT_EQ(fan.size(), 2u);
  for (const auto& f : fan) {
    if (f.component.type == ComponentType::kFan) {
      EXPECT_EQ(f.severity, Severity::kWarning);  // Non-critical, not critical
      EXPECT_EQ(f.action, Action::kRma);
    }
  }
  EXPECT_EQ(Of(all, FaultClass::kVoltageOutOfRange).size(), 1u);
  EXPECT_EQ(Of(all, FaultClass::kThermalInlet).size(), 1u);
  for (const auto& f : all) EXPECT_NE(f.component.type, ComponentType::kGpu);
}

TEST(OobDetect, SelDeassertClosesTheSensorFinding) {
  auto d = MakeOobEventDetector({});
  d->Observe(Sel("Voltage", "Lower Critical - going low", {{"sensor", "P12V"}, {"assertion", "asserted"}}));
  d->Observe(Sel("Voltage", "Lower Critical - going low", {{"sensor", "P12V"}, {"assertion", "deasserted"}},
                 kT0 + 5 * kNsPerSec));
  auto f = Of(d->Findings(), FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].attrs.at("state"), "cleared");
  EXPECT_EQ(f[0].last_ns, kT0 + 5 * kNsPerSec);
  // Redfish spells it in EntryCode.
  d->Observe(Sel("Fan", "Lower Critical - going low", {{"sensor", "FAN1"}}));
  d->Observe(Sel("Fan", "Deassert", {{"sensor", "FAN1"}}, kT0 + 9));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kCoolingDegraded)[0].attrs.at("state"), "cleared");
}

TEST(OobDetect, RegistryMessagesMatchIgnoringVersion) {
  auto d = MakeOobEventDetector({});
  auto msg = [&](const std::string& id, const std::string& arg, const std::string& origin, int64_t t) {
    Observation o = Obs(ObsKind::kSelEntry, Chassis(), std::nullopt,
                        {{"message_id", id}, {"message_args", arg}, {"origin", origin}}, t);
    d->Observe(o);
  };
  msg("Power.1.2.0.PowerSupplyFailed", "PSU2", "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/PSU2", kT0);
  msg("Power.PowerSupplyFailed", "PSU2", "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/PSU2", kT0 + 1);
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);  // same message, same part: one finding, two observations
  EXPECT_EQ(f[0].count, 2u);
  EXPECT_EQ(f[0].component.Id(), "psu/PSU2");
  EXPECT_EQ(f[0].action, Action::kRma);
  msg("Environmental.1.0.LeakDetectedCritical", "Tray",
      "/redfish/v1/Chassis/1U/ThermalSubsystem/LeakDetection/LeakDetectors/Tray", kT0 + 2);
  msg("Environmental.1.1.LeakDetectedNormal", "Tray",
      "/redfish/v1/Chassis/1U/ThermalSubsystem/LeakDetection/LeakDetectors/Tray", kT0 + 3);
  auto leak = Of(d->Findings(), FaultClass::kCoolantLeak);
  ASSERT_EQ(leak.size(), 1u);
  EXPECT_EQ(leak[0].component.Id(), "coolant/leak-Tray");
  EXPECT_EQ(leak[0].attrs.at("state"), "cleared");
  msg("Power.1.0.LossOfInputPower", "PSU1", "", kT0 + 4);
  for (const auto& x : Of(d->Findings(), FaultClass::kPowerSupply)) {
    if (x.component.name == "PSU1") {
      EXPECT_EQ(x.action, Action::kFacilityTicket);
    }
  }
}

TEST(OobDetect, ConditionsOnHealthObservationsCount) {
  auto d = MakeOobEventDetector({});
  d->Observe(Obs(
      ObsKind::kHealth, Psu("Bay1"), 1,
      {{"message_id", "Power.1.0.PowerSupplyPredictiveFailure"}, {"message_args", "PSU 1"}, {"condition", "true"}}));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

TEST(OobDetect, OtherLayersAreIgnored) {
  auto all = MakeOobDetectors();
  ASSERT_EQ(all.size(), 3u);
  Observation o = Obs(ObsKind::kPsuState, Psu("PSU1"), 2, {{"health", "Critical"}});
  o.layer = Layer::kGpu;
  for (auto& d : all) {
    d->Observe(o);
    EXPECT_TRUE(d->Findings().empty()) << d->name();
  }
}

// --- Real BMCs without false alarms (issue 10 §3) ---

std::vector<Finding> Above(const std::vector<Finding>& all, Action action) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.action > action) out.push_back(f);
  }
  return out;
}

std::vector<Finding> All(const std::vector<std::unique_ptr<Detector>>& ds) {
  std::vector<Finding> out;
  for (const auto& d : ds) {
    for (auto& f : d->Findings()) out.push_back(std::move(f));
  }
  return out;
}

void Feed(const std::vector<std::unique_ptr<Detector>>& ds, const Observation& o) {
  for (const auto& d : ds) d->Observe(o);
}

TEST(OobDetect, EmptyBayIsNotAFailingPsuWhateverItsHealth) {
  auto ds = MakeOobDetectors();
  // Dell reports Warning, others Critical or nothing, some only present=false.
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU3"), -1, {{"state", "Absent"}, {"health", "Warning"}}));
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU4"), -1, {{"state", "Absent"}, {"health", "Critical"}}));
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU5"), -1, {{"state", "Absent"}}));
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU6"), -1, {{"present", "false"}, {"health", "Critical"}}));
  Feed(ds, Obs(ObsKind::kVoltage, Psu("PSU3"), 0, {{"role", "input"}}));  // an empty bay's meter
  Feed(ds,
       Obs(ObsKind::kFanState, {ComponentType::kFan, "Fan6A", {}}, -1, {{"state", "Absent"}, {"health", "Warning"}}));
  // Two installed, healthy supplies carry the load; the empty bays add nothing.
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  Feed(ds, Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  Feed(ds, Obs(ObsKind::kPowerCapacity, Psu("PSU1"), 2400, {}));
  Feed(ds, Obs(ObsKind::kPowerCapacity, Psu("PSU2"), 2400, {}));
  Feed(ds, Obs(ObsKind::kPower, Chassis(), 4500, {}));
  EXPECT_TRUE(All(ds).empty());
}

TEST(OobDetect, SupplyPulledFromItsBayIsANoteAndItsFailureLeavesWithIt) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 2, {{"health", "Critical"}, {"state", "Enabled"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  ASSERT_EQ(Of(d->Findings(), FaultClass::kPowerSupply).size(), 1u);
  // The failed supply is pulled (to be replaced); the healthy one is pulled too.
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), -1, {{"state", "Absent"}, {"health", "Warning"}}, kT0 + kNsPerSec));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), -1, {{"state", "Absent"}}, kT0 + kNsPerSec));
  size_t removed = 0;
  for (const auto& f : d->Findings()) {
    const bool open = f.attrs.at("state") == "open";
    if (f.summary.find("removed") != std::string::npos) {
      ++removed;
      EXPECT_EQ(f.action, Action::kMonitor);
      EXPECT_TRUE(open);
    } else {
      EXPECT_FALSE(open) << f.summary;  // PSU1's failure cleared when it left the bay
    }
  }
  EXPECT_EQ(removed, 2u);
  // A new supply in the bay closes the note.
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}, {"state", "Enabled"}}, kT0 + 2 * kNsPerSec));
  size_t open = 0;
  for (const auto& f : d->Findings()) open += f.attrs.at("state") == "open";
  EXPECT_EQ(open, 1u);  // PSU1's bay is still empty
}

TEST(OobDetect, StandbyAndDisabledSuppliesFollowTheSchema) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"state", "StandbyOffline"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}, {"state", "StandbySpare"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU3"), 0, {{"health", "OK"}, {"state", "Disabled"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU4"), -1, {{"state", "Disabled"}}));
  EXPECT_TRUE(d->Findings().empty());
  // A spare that fails is still a failed part; "present but cannot be used" is lost.
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 2, {{"health", "Critical"}, {"state", "StandbySpare"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU5"), -1, {{"state", "UnavailableOffline"}}));
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) EXPECT_EQ(x.action, Action::kRma);
}

TEST(OobDetect, DisabledSupplyAddsNoCapacity) {
  auto d = MakeOobPowerDetector({});
  for (const char* id : {"PSU1", "PSU2", "PSU3"}) d->Observe(Obs(ObsKind::kPowerCapacity, Psu(id), 3000, {}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 0, {{"health", "OK"}, {"state", "Disabled"}}));
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU3"), 2, {{"health", "Critical"}, {"state", "Enabled"}}));
  d->Observe(Obs(ObsKind::kPower, Chassis(), 2800, {}));  // only PSU1's 3000 W is left
  EXPECT_EQ(Of(d->Findings(), FaultClass::kPowerInsufficient).size(), 1u);
}

TEST(OobDetect, OnlyTheChassisIntakeIsAnInlet) {
  auto d = MakeOobThermalDetector({});
  // A PSU's own inlet, whatever the context says; a CPU die/DTS in the intake context.
  d->Observe(Obs(ObsKind::kTemperature, Sensor("PSU1_Inlet_Temp"), 55, {{"physical_context", "Intake"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("PS2_Inlet"), 55, {{"physical_context", "SystemBoard"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("34-P_S_1_Inlet"), 55, {{"physical_context", "PowerSupply"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet"), 55, {{"physical_context", "PowerSupply"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("CPU0_DTS"), 96, {{"physical_context", "Intake"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("CPU1Temp"), 96, {{"physical_context", "Intake"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("Die_Temp"), 96, {{"physical_context", "Intake"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("T7"), 55, {{"physical_context", "Intake"}, {"device_name", "PSU 3"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("Coolant_In"), 55, {{"physical_context", "LiquidInlet"}}));
  EXPECT_TRUE(d->Findings().empty());
  // The intake, named or placed: a vendor name in the wrong context still counts.
  d->Observe(Obs(ObsKind::kTemperature, Sensor("System_Board_Inlet_Temp"), 48,
                 {{"physical_context", "SystemBoard"}, {"upper_noncritical", "42"}, {"upper_critical", "47"}}));
  d->Observe(Obs(ObsKind::kTemperature, Sensor("T1"), 44, {{"physical_context", "Intake"}, {"upper_critical", "43"}}));
  auto f = Of(d->Findings(), FaultClass::kThermalInlet);
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) EXPECT_EQ(x.severity, Severity::kCritical);
}

TEST(OobDetect, FixedInletLimitOnAHealthySensorIsOnlyANote) {
  auto d = MakeOobThermalDetector({});
  d->Observe(Obs(ObsKind::kTemperature, Sensor("Ambient_Temp"), 37, {{"health", "OK"}}));
  auto f = Of(d->Findings(), FaultClass::kThermalInlet);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kMonitor);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  // Own thresholds take precedence over the fixed 35 C; the BMC's Health counts alone too.
  auto own = MakeOobThermalDetector({});
  own->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet"), 37, {{"health", "OK"}, {"upper_noncritical", "40"}}));
  EXPECT_TRUE(own->Findings().empty());
  own->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet2"), 30, {{"health", "Warning"}}));
  auto w = Of(own->Findings(), FaultClass::kThermalInlet);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].action, Action::kFacilityTicket);
  EXPECT_EQ(w[0].severity, Severity::kWarning);
  own->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet3"), 30, {{"upper_fatal", "29"}}));
  EXPECT_EQ(Of(own->Findings(), FaultClass::kThermalInlet).size(), 2u);
  // A quirk-marked reading is never evidence.
  own->Observe(Obs(ObsKind::kTemperature, Sensor("Inlet4"), 2750, {{"quirk", "unscaled"}, {"upper_critical", "45"}}));
  EXPECT_EQ(Of(own->Findings(), FaultClass::kThermalInlet).size(), 2u);
}

TEST(OobDetect, ImplausibleInputOnAHealthySupplyIsAQuirkNotATicket) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}, {"state", "Enabled"}}));
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 6553.5, {{"role", "input"}}));
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 0.2, {{"role", "input"}}, kT0 + 1));
  d->Observe(Obs(ObsKind::kVoltage, Sensor("12V"), 12000, {{"upper_critical", "13.2"}}));
  EXPECT_TRUE(d->Findings().empty());
  // The same 0 V on a supply the BMC says failed is a lost feed.
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU2"), 2, {{"health", "Critical"}, {"state", "Enabled"}}));
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU2"), 0, {{"role", "input"}}));
  auto v = Of(d->Findings(), FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].component.Id(), "psu/PSU2");
  EXPECT_EQ(v[0].action, Action::kFacilityTicket);
  EXPECT_EQ(v[0].severity, Severity::kCritical);
}

TEST(OobDetect, FixedInputWindowOnAHealthySupplyIsANote) {
  auto d = MakeOobPowerDetector({});
  d->Observe(Obs(ObsKind::kPsuState, Psu("PSU1"), 0, {{"health", "OK"}}));
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU1"), 277, {{"role", "input"}}));  // a 277 V feed
  auto f = Of(d->Findings(), FaultClass::kVoltageOutOfRange);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].action, Action::kMonitor);
  // Unknown health: the fixed window still decides.
  d->Observe(Obs(ObsKind::kVoltage, Psu("PSU9"), 277, {{"role", "input"}}));
  EXPECT_EQ(Above(d->Findings(), Action::kMonitor).size(), 1u);
}

TEST(OobDetect, SameNameInTwoChassisIsTwoParts) {
  auto d = MakeOobPowerDetector({});
  ComponentRef a{ComponentType::kPsu, "PSU1", {{"chassis", "Board0"}}};
  ComponentRef b{ComponentType::kPsu, "PSU1", {{"chassis", "Board1"}}};
  d->Observe(Obs(ObsKind::kPsuState, a, 2, {{"health", "Critical"}}));
  d->Observe(Obs(ObsKind::kPsuState, b, 0, {{"health", "OK"}}));  // must not clear Board0's
  auto f = Of(d->Findings(), FaultClass::kPowerSupply);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].attrs.at("state"), "open");
  EXPECT_EQ(f[0].component.keys.at("chassis"), "Board0");
}

TEST(OobDetect, EventsAboutAPartsInletOrARemovalAreNotInletOrRma) {
  auto d = MakeOobEventDetector({});
  d->Observe(Sel("Temperature", "Upper Critical - going high", {{"sensor", "PSU1 Inlet Temp"}}));
  d->Observe(Obs(
      ObsKind::kSelEntry, Chassis(), std::nullopt,
      {{"message_id", "Environmental.1.0.TemperatureAboveUpperCriticalThreshold"}, {"message_args", "CPU0 DTS|101"}}));
  d->Observe(Obs(ObsKind::kSelEntry, Chassis(), std::nullopt,
                 {{"message_id", "Power.1.0.PowerSupplyRemoved"}, {"message_args", "PSU3"}}));
  d->Observe(Sel("Power Supply", "Device Absent", {{"sensor", "PS4 Status"}}));
  auto all = d->Findings();
  EXPECT_TRUE(Of(all, FaultClass::kThermalInlet).empty());
  EXPECT_EQ(Of(all, FaultClass::kCoolingDegraded).size(), 2u);
  for (const auto& f : Of(all, FaultClass::kPowerSupply)) EXPECT_EQ(f.action, Action::kMonitor) << f.summary;
  EXPECT_EQ(Of(all, FaultClass::kPowerSupply).size(), 2u);
  // The chassis intake still is an inlet, also when only the origin names it (on a chassis
  // whose id says GPU: the board, not a GPU sensor).
  d->Observe(Sel("Temperature", "Upper Critical - going high", {{"sensor", "System Board Inlet Temp"}}));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kThermalInlet).size(), 1u);
  d->Observe(Obs(ObsKind::kSelEntry, Chassis(), std::nullopt,
                 {{"message_id", "Environmental.1.0.TemperatureAboveUpperCautionThreshold"},
                  {"origin", "/redfish/v1/Chassis/GPU1/Sensors/Intake_Temp"}}));
  EXPECT_EQ(Of(d->Findings(), FaultClass::kThermalInlet).size(), 2u);
}

TEST(OobDetect, BareExcerptOfASensorUsesTheSensorsOwnLimits) {
  // A Sensor with thresholds and its ThermalMetrics excerpt (no thresholds, no Health),
  // in either order within a sweep: 36 C is under the sensor's own 40 C.
  for (bool excerpt_first : {false, true}) {
    auto d = MakeOobThermalDetector({});
    Observation full = Obs(ObsKind::kTemperature, Sensor("Inlet_Temp"), 36,
                           {{"physical_context", "Intake"}, {"upper_noncritical", "40"}, {"health", "OK"}});
    Observation bare = Obs(ObsKind::kTemperature, Sensor("Inlet_Temp"), 36,
                           {{"data_source", "/redfish/v1/Chassis/1/Sensors/Inlet_Temp"}});
    d->Observe(excerpt_first ? bare : full);
    d->Observe(excerpt_first ? full : bare);
    d->Observe(bare);  // next sweep's excerpt
    auto f = Of(d->Findings(), FaultClass::kThermalInlet);
    for (const auto& x : f) {
      EXPECT_LE(x.action, Action::kMonitor) << excerpt_first;
      EXPECT_EQ(x.attrs.at("state"), "cleared") << excerpt_first;
    }
  }
}

TEST(OobSensorClass, NamesAndContexts) {
  EXPECT_EQ(ClassifySensorText("PSU1 Inlet Temp"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("PS2Inlet"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("Power Supply 1 Inlet"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("CPU0_DTS"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("VR P1 Temp"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("SYS_INLET"), TempSite::kInlet);
  EXPECT_EQ(ClassifySensorText("01-Inlet Ambient"), TempSite::kInlet);
  EXPECT_EQ(ClassifySensorText("Front Panel Ambient"), TempSite::kInlet);
  EXPECT_EQ(ClassifySensorText("SystemBoardInletTemp"), TempSite::kInlet);
  EXPECT_EQ(ClassifySensorText("Exhaust Temp"), TempSite::kPart);
  EXPECT_EQ(ClassifySensorText("Board Temp"), TempSite::kOther);
  EXPECT_EQ(ClassifySensorText(""), TempSite::kOther);
  Observation summary = Obs(ObsKind::kTemperature, Sensor("intake_summary"), 24, {{"summary", "true"}});
  EXPECT_EQ(ClassifyTemperature(summary), TempSite::kInlet);
}

}  // namespace
}  // namespace faultline
