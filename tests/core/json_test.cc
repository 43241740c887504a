#include "core/json.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

Observation SampleObservation() {
  Observation o;
  o.time_ns = 1737417600LL * 1'000'000'000;
  o.mono_us = 227996636;
  o.seq = 3973;
  o.node = "gpu-node-07";
  o.layer = Layer::kOs;
  o.component = GpuComponent("3");
  o.component.keys["bdf"] = "0000:b5:00.0";
  o.kind = ObsKind::kXid;
  o.code = 79;
  o.value = 1.5;
  o.text = "GPU has fallen off the bus";
  o.source = Source::kKmsg;
  o.raw = "NVRM: Xid (PCI:0000:b5:00): 79, pid=<unknown>, GPU has fallen off the bus.";
  o.attrs["pid"] = "1234";
  o.count = 7;
  return o;
}

TEST(JsonTest, ObservationRoundTrips) {
  Observation o = SampleObservation();
  Json j = o;
  EXPECT_EQ(j["kind"], "xid");
  EXPECT_EQ(j["component"]["id"], "gpu/3");
  auto back = DecodeJson<Observation>(j.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);
}

TEST(JsonTest, DiagnosisRoundTrips) {
  Diagnosis d;
  d.fault_class = FaultClass::kGpuFellOffBus;
  d.layer = Layer::kOs;
  d.component = PcieComponent("0000:b5:00.0");
  d.action = Action::kDrain;
  d.confidence = 0.9;
  d.severity = Severity::kFatal;
  d.summary = "GPU fell off the bus after AER errors on its upstream port";
  d.evidence.push_back({5, 12345, Source::kKmsg, "pcie/0000:b5:00.0", "Xid 79", 1});
  d.ruled_out.push_back({Layer::kOob, "no BMC data", {}});
  d.explains = {"xid 45 on gpu/3"};
  Json j = d;
  auto back = DecodeJson<Diagnosis>(j.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d);
}

TEST(JsonTest, FindingRoundTrips) {
  Finding f;
  f.layer = Layer::kGpu;
  f.component = GpuComponent("1");
  f.fault_class = FaultClass::kRowRemapPending;
  f.severity = Severity::kCritical;
  f.action = Action::kResetGpu;
  f.confidence = 0.8;
  f.first_ns = 1;
  f.last_ns = 2;
  f.count = 3;
  f.summary = "remap pending";
  f.attrs["sympathetic"] = "false";
  Json j = f;
  auto back = DecodeJson<Finding>(j.dump());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, f);
}

TEST(JsonTest, UnknownEnumOrBrokenTextIsCorruptNotACrash) {
  auto bad_kind =
      DecodeJson<Observation>(R"({"layer":"os","kind":"bogus","source":"kmsg","component":{"type":"gpu","name":"0"}})");
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_EQ(bad_kind.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(bad_kind.status().message().find("bogus"), std::string::npos);
  EXPECT_FALSE(DecodeJson<Observation>("{\"layer\":").ok());
  EXPECT_FALSE(DecodeJson<Diagnosis>("[]").ok());
}

// A float where an integer belongs: in range it is read (as JSON writers may emit 1e9),
// out of range or not a number it is corrupt, never undefined behaviour (UBSan traps the
// cast in the sanitizer and fuzz builds).
TEST(JsonTest, AFloatInAnIntegerFieldIsReadWhenItFitsAndRefusedWhenItDoesNot) {
  const std::string head = R"({"layer":"os","kind":"xid","source":"kmsg","component":{"type":"gpu","name":"0"},)";
  auto fits = DecodeJson<Observation>(head + R"("time_ns":1.5e18,"code":79.0})");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->time_ns, 1'500'000'000'000'000'000);
  EXPECT_EQ(fits->code, 79);
  for (const char* bad : {R"("time_ns":1.77e29})", R"("time_ns":-9.3e18})", R"("code":9.3e18})",
                          R"("mono_us":1e300})", R"("count":-1e40})"}) {
    auto r = DecodeJson<Observation>(head + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << bad;
  }
  EXPECT_EQ(JsonInt<int64_t>(Json(-9.2e18)), static_cast<int64_t>(-9.2e18));
  EXPECT_THROW(JsonInt<uint32_t>(Json(-1.0)), Json::out_of_range);
  EXPECT_THROW(JsonInt<int>(Json(2147483648.0)), Json::out_of_range);
  EXPECT_EQ(JsonInt<int>(Json(2147483647.0)), 2147483647);
}

}  // namespace
}  // namespace faultline
