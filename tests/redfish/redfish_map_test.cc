#include "parse/redfish_map.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace faultline::redfish {
namespace {

MapContext Ctx() {
  MapContext c;
  c.node = "n1";
  c.chassis = "1U";
  c.read_time_ns = 1'700'000'000 * kNsPerSec;
  return c;
}

std::vector<Observation> OfKind(const MapResult& r, ObsKind kind) {
  std::vector<Observation> out;
  for (const auto& o : r.observations) {
    if (o.kind == kind) out.push_back(o);
  }
  return out;
}

TEST(RedfishMap, DeprecatedPowerReadsControlVoltagesAndSupplies) {
  Json j = Json::parse(R"({"@odata.type":"#Power.v1_7_3.Power",
    "PowerControl":[{"PowerConsumedWatts":344,"PowerCapacityWatts":800}],
    "Voltages":[{"Name":"VRM1 Voltage","ReadingVolts":12,"UpperThresholdCritical":13,"LowerThresholdCritical":11,
                 "PhysicalContext":"VoltageRegulator"}],
    "PowerSupplies":[{"MemberId":"0","Name":"PSU A","LineInputVoltage":120,"PowerCapacityWatts":800,
                      "SerialNumber":"1Z1","Status":{"State":"Enabled","Health":"Warning"}}]})");
  MapResult r = MapResource(j, Ctx());
  EXPECT_TRUE(r.warnings.empty());
  auto power = OfKind(r, ObsKind::kPower);
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(power[0].component.Id(), "chassis/1U");
  EXPECT_EQ(*power[0].value, 344);
  EXPECT_EQ(power[0].layer, Layer::kOob);
  EXPECT_EQ(power[0].source, Source::kRedfish);
  EXPECT_EQ(power[0].node, "n1");
  auto volts = OfKind(r, ObsKind::kVoltage);
  ASSERT_EQ(volts.size(), 2u);  // the VRM rail and the PSU line input
  EXPECT_EQ(volts[0].component.Id(), "sensor/VRM1_Voltage");
  EXPECT_EQ(volts[0].attrs.at("upper_critical"), "13");
  EXPECT_EQ(volts[0].attrs.at("physical_context"), "VoltageRegulator");
  EXPECT_EQ(volts[1].component.Id(), "psu/PSU_A");
  EXPECT_EQ(volts[1].attrs.at("role"), "input");
  auto psu = OfKind(r, ObsKind::kPsuState);
  ASSERT_EQ(psu.size(), 1u);
  EXPECT_EQ(psu[0].attrs.at("health"), "Warning");
  EXPECT_EQ(*psu[0].value, 1);
  EXPECT_EQ(psu[0].component.keys.at("serial"), "1Z1");
}

TEST(RedfishMap, DeprecatedThermalTemperaturesAndFans) {
  Json j = Json::parse(R"({"@odata.type":"#Thermal.v1_7_3.Thermal",
    "Temperatures":[{"Name":"Chassis Intake Temp","ReadingCelsius":25,"UpperThresholdNonCritical":30,
                     "UpperThresholdCritical":40,"PhysicalContext":"Intake","Status":{"Health":"OK"}},
                    {"Name":"CPU2 Temp","Status":{"State":"Disabled"}}],
    "Fans":[{"Name":"BaseBoard System Fan","Reading":2100,"ReadingUnits":"RPM","Status":{"Health":"Critical"}}]})");
  MapResult r = MapResource(j, Ctx());
  auto temps = OfKind(r, ObsKind::kTemperature);
  ASSERT_EQ(temps.size(), 1u);  // the disabled sensor has no reading
  EXPECT_EQ(temps[0].attrs.at("upper_noncritical"), "30");
  EXPECT_EQ(temps[0].attrs.at("physical_context"), "Intake");
  auto fan_state = OfKind(r, ObsKind::kFanState);
  ASSERT_EQ(fan_state.size(), 1u);
  EXPECT_EQ(*fan_state[0].value, 2);
  auto speeds = OfKind(r, ObsKind::kFanSpeed);
  ASSERT_EQ(speeds.size(), 1u);
  EXPECT_EQ(speeds[0].attrs.at("units"), "RPM");
}

TEST(RedfishMap, PowerSupplyWithConditionsAndMetrics) {
  Json psu = Json::parse(R"({"@odata.type":"#PowerSupply.v1_6_0.PowerSupply","Id":"Bay1",
    "Status":{"State":"Enabled","Health":"Warning","Conditions":[{"MessageId":"Power.1.0.PowerSupplyPredictiveFailure",
      "Timestamp":"2023-06-08T12:25:00-05:00","Severity":"Warning","MessageArgs":["PSU 1"]}]},
    "LineInputStatus":"Normal","PowerCapacityWatts":400})");
  MapResult r = MapResource(psu, Ctx());
  auto health = OfKind(r, ObsKind::kHealth);
  ASSERT_EQ(health.size(), 1u);
  EXPECT_EQ(health[0].attrs.at("message_id"), "Power.1.0.PowerSupplyPredictiveFailure");
  EXPECT_EQ(health[0].attrs.at("message_args"), "PSU 1");
  EXPECT_EQ(health[0].time_ns, *ParseIso8601("2023-06-08T17:25:00Z"));
  EXPECT_EQ(health[0].component.Id(), "psu/Bay1");
  Json metrics = Json::parse(R"({"@odata.type":"#PowerSupplyMetrics.v1_2_0.PowerSupplyMetrics",
    "@odata.id":"/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics",
    "InputVoltage":{"Reading":230.2},"RailVoltage":[{"Reading":3.31},{"Reading":"bad"}],"InputPowerWatts":{"Reading":937.4}})");
  MapResult m = MapResource(metrics, Ctx());
  auto volts = OfKind(m, ObsKind::kVoltage);
  ASSERT_EQ(volts.size(), 2u);
  EXPECT_EQ(volts[0].component.Id(), "psu/Bay1");
  EXPECT_EQ(volts[0].attrs.at("role"), "input");
  EXPECT_EQ(volts[1].attrs.at("role"), "rail");
  EXPECT_EQ(OfKind(m, ObsKind::kPower).size(), 1u);
}

TEST(RedfishMap, ThermalSubsystemParts) {
  MapResult fan = MapResource(Json::parse(R"({"@odata.type":"#Fan.v1_6_0.Fan","Id":"Bay1",
    "Status":{"Health":"OK"},"SpeedPercent":{"Reading":45,"SpeedRPM":2200}})"),
                              Ctx());
  EXPECT_EQ(OfKind(fan, ObsKind::kFanSpeed).size(), 2u);
  MapResult pump = MapResource(Json::parse(R"({"@odata.type":"#Pump.v1_2_0.Pump","Id":"1",
    "Status":{"Health":"Critical"},"PumpSpeedPercent":{"Reading":0}})"),
                               Ctx());
  auto ps = OfKind(pump, ObsKind::kPumpState);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].component.Id(), "coolant/pump-1");
  EXPECT_EQ(*ps[0].value, 2);
  MapResult cc = MapResource(Json::parse(R"({"@odata.type":"#CoolantConnector.v1_3_0.CoolantConnector","Id":"CPU1",
    "SupplyTemperatureCelsius":{"Reading":14.8},"ReturnTemperatureCelsius":{"Reading":38.2},
    "DeltaTemperatureCelsius":{"Reading":23.4},"FlowLitersPerMinute":{"Reading":10}})"),
                             Ctx());
  auto temps = OfKind(cc, ObsKind::kCoolantTemp);
  ASSERT_EQ(temps.size(), 3u);
  EXPECT_EQ(temps[1].attrs.at("point"), "return");
  EXPECT_EQ(OfKind(cc, ObsKind::kCoolantFlow).size(), 1u);
  MapResult tm = MapResource(Json::parse(R"({"@odata.type":"#ThermalMetrics.v1_3_2.ThermalMetrics",
    "TemperatureSummaryCelsius":{"Intake":{"Reading":24.8}},
    "TemperatureReadingsCelsius":[{"Reading":40.5,"DeviceName":"Exhaust"}]})"),
                             Ctx());
  auto t = OfKind(tm, ObsKind::kTemperature);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].attrs.at("physical_context"), "Intake");
}

TEST(RedfishMap, LeakDetectorStatesIncludingNonStandard) {
  auto map = [](const char* text) { return MapResource(Json::parse(text), Ctx()); };
  MapResult ok = map(R"({"@odata.type":"#LeakDetector.v1_6_0.LeakDetector","Id":"Moisture","DetectorState":"OK",
                        "Status":{"Health":"OK"}})");
  EXPECT_EQ(*ok.observations[0].value, 0);
  MapResult crit = map(R"({"@odata.type":"#LeakDetector.v1_6_0.LeakDetector","Id":"M","DetectorState":"Critical"})");
  EXPECT_EQ(*crit.observations[0].value, 2);
  MapResult quirk =
      map(R"({"@odata.type":"#LeakDetector.v1_0_0.LeakDetector","Id":"M","DetectorState":"LeakDetected"})");
  EXPECT_EQ(*quirk.observations[0].value, 2);
  EXPECT_EQ(quirk.warnings.size(), 1u);
  MapResult health_only =
      map(R"({"@odata.type":"#LeakDetector.v1_0_0.LeakDetector","Id":"M","Status":{"Health":"Warning"}})");
  EXPECT_EQ(*health_only.observations[0].value, 1);
}

TEST(RedfishMap, SensorsByReadingType) {
  MapResult t = MapResource(Json::parse(R"({"@odata.type":"#Sensor.v1_12_0.Sensor","Id":"IntakeTemp","Reading":24.8,
    "ReadingType":"Temperature","ReadingUnits":"Cel","PhysicalContext":"Intake",
    "Thresholds":{"UpperCaution":{"Reading":35},"UpperCritical":{"Reading":40,"Activation":"Increasing"}}})"),
                            Ctx());
  ASSERT_EQ(t.observations.size(), 1u);
  EXPECT_EQ(t.observations[0].kind, ObsKind::kTemperature);
  EXPECT_EQ(t.observations[0].attrs.at("upper_noncritical"), "35");
  EXPECT_EQ(t.observations[0].attrs.at("upper_critical"), "40");
  MapResult v = MapResource(Json::parse(R"({"@odata.type":"#Sensor.v1_0_0.Sensor","Id":"PS1InputVoltage","Reading":230,
    "ReadingType":"Voltage"})"),
                            Ctx());
  EXPECT_EQ(v.observations[0].kind, ObsKind::kVoltage);
  MapResult e = MapResource(Json::parse(R"({"@odata.type":"#Sensor.v1_0_0.Sensor","Id":"PS1Energy","Reading":3,
    "ReadingType":"EnergykWh"})"),
                            Ctx());
  EXPECT_EQ(e.observations[0].kind, ObsKind::kOther);
  MapResult none =
      MapResource(Json::parse(R"({"@odata.type":"#Sensor.v1_0_0.Sensor","Id":"X","Reading":null})"), Ctx());
  EXPECT_TRUE(none.observations.empty());
}

TEST(RedfishMap, LogEntrySelWithOffsetCorrection) {
  MapContext ctx = Ctx();
  ctx.bmc_offset_ns = 300 * kNsPerSec;  // BMC runs 5 minutes fast
  ctx.offset_known = true;
  Json j = Json::parse(R"({"@odata.type":"#LogEntry.v1_21_0.LogEntry","Id":"7","EntryType":"SEL","Severity":"Critical",
    "Created":"2012-03-07T14:44:00-0600","EntryCode":"Upper Critical - going high","SensorType":"Temperature",
    "SensorNumber":1,"Message":"Temperature threshold exceeded","MessageId":"0x592A28",
    "Links":{"OriginOfCondition":{"@odata.id":"/redfish/v1/Chassis/1U/Thermal"}}})");
  MapResult r = MapLogEntry(j, ctx, "/redfish/v1/Systems/1/LogServices/SEL/Entries");
  ASSERT_EQ(r.observations.size(), 1u);
  const Observation& o = r.observations[0];
  EXPECT_EQ(o.kind, ObsKind::kSelEntry);
  EXPECT_EQ(o.seq, 7u);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.attrs.at("sensor_type"), "Temperature");
  EXPECT_EQ(o.attrs.at("entry_code"), "Upper Critical - going high");
  EXPECT_EQ(o.attrs.at("origin"), "/redfish/v1/Chassis/1U/Thermal");
  EXPECT_EQ(o.attrs.at("raw_time"), "2012-03-07T14:44:00-0600");
  EXPECT_EQ(o.attrs.at("time_corrected"), "true");
  EXPECT_EQ(o.time_ns, *ParseIso8601("2012-03-07T20:39:00Z"));
}

TEST(RedfishMap, PlaceholderDatesKeepReadTimeAndWarn) {
  Json j = Json::parse(R"({"@odata.type":"#LogEntry.v1_0_0.LogEntry","Id":"1","EntryType":"Event",
    "Created":"0000-00-00T00:00:00","MessageId":"Power.1.0.PowerSupplyFailed"})");
  MapResult r = MapLogEntry(j, Ctx(), "log");
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].time_ns, Ctx().read_time_ns);
  EXPECT_EQ(r.observations[0].attrs.at("time_corrected"), "unknown");
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(RedfishMap, SseEventPayload) {
  Json j = Json::parse(R"({"@odata.type":"#Event.v1_7_0.Event","Events":[
    {"EventId":"9","MessageId":"Environmental.1.0.LeakDetectedCritical","MessageSeverity":"Critical",
     "MessageArgs":["Tray"],"EventTimestamp":"2025-01-01T00:00:00Z",
     "OriginOfCondition":{"@odata.id":"/redfish/v1/Chassis/1/ThermalSubsystem/LeakDetection/LeakDetectors/Tray"}},
    42]})");
  MapResult r = MapResource(j, Ctx());
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].attrs.at("severity"), "Critical");
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(RedfishMap, HostileShapesNeverThrow) {
  const char* docs[] = {
      R"({"@odata.type":"#Power.v1.Power","PowerSupplies":"oops","Voltages":null,"PowerControl":[null,1,"x"]})",
      R"({"@odata.type":"#Thermal.v1.Thermal","Temperatures":{"a":1},"Fans":[[]]})",
      R"({"@odata.type":"#LogEntry.v1.LogEntry","Id":-5,"Created":12,"MessageArgs":"no","Links":[]})",
      R"({"@odata.type":42})",
      R"([1,2,3])",
      R"("just a string")",
      R"({"@odata.type":"#Sensor.v1.Sensor","Reading":1e308,"Thresholds":[1]})",
      R"({"@odata.type":"#CoolantConnector.v1.CoolantConnector","SupplyTemperatureCelsius":5})",
      R"({"@odata.type":"#Chassis.v1.Chassis","Status":{"Conditions":[1,{"MessageArgs":[{"x":1}]}]}})",
  };
  for (const char* d : docs) {
    EXPECT_NO_THROW({ MapResult r = MapResource(Json::parse(d), Ctx()); }) << d;
  }
  MapResult bad = MapResource(Json::parse(docs[0]), Ctx());
  EXPECT_FALSE(bad.warnings.empty());
}

TEST(RedfishMap, ClockOffsetFromManagerDateTime) {
  Json m = Json::parse(R"({"DateTime":"2025-01-01T00:05:00+00:00"})");
  auto off = EstimateClockOffset(m, *ParseIso8601("2025-01-01T00:00:00Z"));
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(*off, 300 * kNsPerSec);
  EXPECT_FALSE(EstimateClockOffset(Json::parse(R"({"DateTime":"0000-00-00T00:00:00"})"), 0).has_value());
  EXPECT_FALSE(EstimateClockOffset(Json::parse(R"({})"), 0).has_value());
}

// Empty bays, in each shape vendors use: Absent with Warning, Critical, no health, and
// zero or null readings. One state observation saying "not present", no readings.
TEST(RedfishMap, AbsentBaysCarryNoReadingsWhateverTheirHealth) {
  Json power = Json::parse(R"({"@odata.type":"#Power.v1_5_0.Power","PowerSupplies":[
    {"MemberId":"PSU.Slot.3","Name":"PS3 Status","Status":{"State":"Absent","Health":"Warning"},"LineInputVoltage":0,
     "PowerCapacityWatts":0},
    {"MemberId":"PSU.Slot.4","Name":"PS4 Status","Status":{"State":"Absent","Health":"Critical"},
     "LineInputVoltage":null},
    {"MemberId":"2","Name":"PS5","Status":{"State":"Absent"},"Status@Redfish.Deprecated":"x",
     "Oem":{"Vendor":{"Present":false}}}]})");
  MapResult r = MapResource(power, Ctx());
  auto psus = OfKind(r, ObsKind::kPsuState);
  ASSERT_EQ(psus.size(), 3u);
  for (const auto& o : psus) {
    EXPECT_EQ(o.attrs.at("present"), "false");
    EXPECT_EQ(o.attrs.at("state"), "Absent");
  }
  EXPECT_EQ(psus[1].attrs.at("health"), "Critical");  // kept as seen, judged by the detector
  EXPECT_TRUE(OfKind(r, ObsKind::kVoltage).empty());
  EXPECT_TRUE(OfKind(r, ObsKind::kPowerCapacity).empty());

  Json psu = Json::parse(R"({"@odata.type":"#PowerSupply.v1_5_0.PowerSupply","Id":"PSU5",
    "Status":{"State":"Absent","Health":"Warning","Conditions":[{"MessageId":"Power.1.0.PowerSupplyFailed",
    "Severity":"Critical"}]},"PowerCapacityWatts":0})");
  MapResult one = MapResource(psu, Ctx());
  ASSERT_EQ(one.observations.size(), 1u);  // no capacity, no condition from an empty bay
  EXPECT_EQ(one.observations[0].kind, ObsKind::kPsuState);

  Json thermal = Json::parse(R"({"@odata.type":"#Thermal.v1_5_0.Thermal",
    "Fans":[{"MemberId":"Fan6A","Name":"Fan6A","Reading":0,"Status":{"State":"Absent","Health":"Warning"}}],
    "Temperatures":[{"Name":"CPU2 Temp","ReadingCelsius":0,"Status":{"State":"Absent","Health":"Warning"}}]})");
  MapResult t = MapResource(thermal, Ctx());
  ASSERT_EQ(t.observations.size(), 1u);
  EXPECT_EQ(t.observations[0].kind, ObsKind::kFanState);
  EXPECT_EQ(t.observations[0].attrs.at("present"), "false");
}

// Two parts with one Name are two parts (HPE names every supply alike; fans "Fan Block").
TEST(RedfishMap, SameNamedMembersGetDistinctComponents) {
  Json power = Json::parse(R"({"@odata.type":"#Power.v1_3_0.Power","PowerSupplies":[
    {"MemberId":"0","Name":"HpeServerPowerSupply","SerialNumber":"A1","Status":{"Health":"OK","State":"Enabled"}},
    {"MemberId":"1","Name":"HpeServerPowerSupply","SerialNumber":"A2","Status":{"Health":"OK","State":"Enabled"}},
    {"MemberId":"PSU3","Name":"PSU3","Status":{"Health":"OK","State":"Enabled"}}]})");
  auto psus = OfKind(MapResource(power, Ctx()), ObsKind::kPsuState);
  ASSERT_EQ(psus.size(), 3u);
  EXPECT_EQ(psus[0].component.Id(), "psu/HpeServerPowerSupply_0");
  EXPECT_EQ(psus[1].component.Id(), "psu/HpeServerPowerSupply_1");
  EXPECT_EQ(psus[2].component.Id(), "psu/PSU3");  // a unique Name stays as it is
  EXPECT_EQ(psus[1].component.keys.at("serial"), "A2");

  // No MemberId, or a MemberId equal to the Name: the array index tells them apart.
  Json thermal = Json::parse(R"({"@odata.type":"#Thermal.v1_1_0.Thermal","Temperatures":[
    {"Name":"Temp","ReadingCelsius":30},{"Name":"Temp","MemberId":"Temp","ReadingCelsius":31}],
    "Fans":[{"Name":"Fan Block","MemberId":"4","Reading":30},{"Name":"Fan Block","MemberId":"5","Reading":31}]})");
  MapResult r = MapResource(thermal, Ctx());
  auto temps = OfKind(r, ObsKind::kTemperature);
  ASSERT_EQ(temps.size(), 2u);
  EXPECT_EQ(temps[0].component.Id(), "sensor/Temp_0");
  EXPECT_EQ(temps[1].component.Id(), "sensor/Temp_1");
  auto fans = OfKind(r, ObsKind::kFanState);
  ASSERT_EQ(fans.size(), 2u);
  EXPECT_EQ(fans[0].component.Id(), "fan/Fan_Block_4");
  EXPECT_EQ(fans[1].component.Id(), "fan/Fan_Block_5");

  // ThermalMetrics: the data source names the sensor, not the DeviceName they share.
  Json tm = Json::parse(R"({"@odata.type":"#ThermalMetrics.v1_3_0.ThermalMetrics","TemperatureReadingsCelsius":[
    {"DeviceName":"Inlet","Reading":24,"DataSourceUri":"/redfish/v1/Chassis/1/Sensors/Inlet_Temp"},
    {"DeviceName":"Inlet","Reading":47,"DataSourceUri":"/redfish/v1/Chassis/1/Sensors/PSU0_Inlet_Temp",
     "PhysicalContext":"PowerSupply"}]})");
  auto readings = OfKind(MapResource(tm, Ctx()), ObsKind::kTemperature);
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_EQ(readings[0].component.Id(), "sensor/Inlet_Temp");
  EXPECT_EQ(readings[1].component.Id(), "sensor/PSU0_Inlet_Temp");
  EXPECT_EQ(readings[1].attrs.at("physical_context"), "PowerSupply");
  EXPECT_EQ(readings[1].attrs.at("device_name"), "Inlet");
}

TEST(RedfishMap, ZeroUpperThresholdsArePlaceholders) {
  Json j = Json::parse(R"({"@odata.type":"#Thermal.v1_1_0.Thermal","Temperatures":[
    {"Name":"05-Inlet Sensor 2","ReadingCelsius":23,"UpperThresholdCritical":0,"UpperThresholdFatal":0,
     "LowerThresholdCritical":0,"PhysicalContext":"Intake"}]})");
  auto t = OfKind(MapResource(j, Ctx()), ObsKind::kTemperature);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].attrs.count("upper_critical"), 0u);
  EXPECT_EQ(t[0].attrs.count("upper_fatal"), 0u);
  EXPECT_EQ(t[0].attrs.at("lower_critical"), "0");  // a lower bound of 0 is a real bound
  Json s = Json::parse(R"({"@odata.type":"#Sensor.v1_5_0.Sensor","Id":"T","Reading":20,"ReadingType":"Temperature",
    "Thresholds":{"UpperCritical":{"Reading":0},"UpperCaution":{"Reading":35}}})");
  auto st = OfKind(MapResource(s, Ctx()), ObsKind::kTemperature);
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].attrs.count("upper_critical"), 0u);
  EXPECT_EQ(st[0].attrs.at("upper_noncritical"), "35");
}

Observation Reading(ObsKind kind, ComponentType type, double v, std::map<std::string, std::string> attrs) {
  Observation o;
  o.kind = kind;
  o.component = {type, "X", {{"chassis", "1U"}}};
  o.value = v;
  o.attrs = std::move(attrs);
  return o;
}

TEST(RedfishMap, ImplausibleReadingsAreQuirksByTheTable) {
  // Raw, unscaled and sentinel values of several kinds: always implausible.
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kPsu, 6553.5, {{"role", "input"}}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kTemperature, ComponentType::kSensor, 2750, {}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kTemperature, ComponentType::kSensor, -128, {}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kFanSpeed, ComponentType::kFan, 65535, {{"units", "RPM"}}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kFanSpeed, ComponentType::kFan, 180, {{"units", "%"}}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kSensor, 12000, {}), false), "");
  EXPECT_NE(ImplausibleReason(Reading(ObsKind::kPower, ComponentType::kPsu, -5, {}), false), "");
  // 0.2 V on a supply input: a lost input unless the BMC calls the supply healthy.
  const Observation low = Reading(ObsKind::kVoltage, ComponentType::kPsu, 0.2, {{"role", "input"}});
  EXPECT_EQ(ImplausibleReason(low, false), "");
  EXPECT_NE(ImplausibleReason(low, true).find("vendor quirk"), std::string::npos);
  // Plausible: a 277 V feed, -12 V rail, 415 V PDU sensor, 48 V DC input, 95 C CPU.
  EXPECT_EQ(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kPsu, 277, {{"role", "input"}}), true), "");
  EXPECT_EQ(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kSensor, -12, {}), true), "");
  EXPECT_EQ(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kSensor, 415, {}), true), "");
  EXPECT_EQ(ImplausibleReason(Reading(ObsKind::kVoltage, ComponentType::kPsu, 48, {{"role", "input"}}), true), "");
  EXPECT_EQ(ImplausibleReason(Reading(ObsKind::kTemperature, ComponentType::kSensor, 95, {}), true), "");
  for (const auto& r : PlausibleRanges()) EXPECT_FALSE(r.why.empty());
}

TEST(RedfishMap, SweepMarksQuirksUsingThePsuHealth) {
  std::vector<Observation> batch;
  Observation ok_psu = Reading(ObsKind::kPsuState, ComponentType::kPsu, 0, {{"health", "OK"}});
  Observation bad_psu = Reading(ObsKind::kPsuState, ComponentType::kPsu, 2, {{"health", "Critical"}});
  bad_psu.component.name = "Y";
  Observation ok_input = Reading(ObsKind::kVoltage, ComponentType::kPsu, 0.2, {{"role", "input"}});
  Observation bad_input = Reading(ObsKind::kVoltage, ComponentType::kPsu, 0, {{"role", "input"}});
  bad_input.component.name = "Y";
  Observation other_chassis = ok_input;  // same name, other chassis: its PSU's health is unknown
  other_chassis.component.keys["chassis"] = "2U";
  batch = {ok_psu, bad_psu, ok_input, bad_input, other_chassis};
  std::vector<std::string> warnings;
  MarkImplausibleReadings(batch, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(batch[2].attrs.count("quirk"), 1u);
  EXPECT_EQ(batch[3].attrs.count("quirk"), 0u);  // 0 V on a failed supply is real
  EXPECT_EQ(batch[4].attrs.count("quirk"), 0u);
}

}  // namespace
}  // namespace faultline::redfish
