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

}  // namespace
}  // namespace faultline::redfish
