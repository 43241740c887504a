// A counter pegged at one value on every InfiniBand port of a node (seen on a healthy H100
// node: excessive_buffer_overrun_errors reads 15 on every port and never moves) is a
// driver/firmware baseline: one informational note, never an ib_link_errors finding per
// port, and never a diagnosis. A port that moves off the baseline is judged by its rise;
// ports that disagree from the start, and single-port nodes, are judged as before.
#include <gtest/gtest.h>

#include "engine/detect/fabric_ib.h"
#include "engine/isolate/isolator.h"
#include "fabric_test_util.h"

namespace faultline {
namespace {

using namespace testing_fabric;  // NOLINT(build/namespaces)

constexpr int64_t kMin = 60 * kSec;

ComponentRef Port(int hca) {
  ComponentRef r = IbRef("mlx5_" + std::to_string(hca), "1");
  r.keys = {{"device", "mlx5_" + std::to_string(hca)},
            {"port", "1"},
            {"link_layer", "InfiniBand"},
            {"model", "MT4129"},
            {"board_id", "MT_0000000900"}};
  return r;
}

// One counter reading as the sysfs collector reports it.
Observation Counter(int hca, ObsKind kind, const std::string& name, double v, int64_t t, bool saturated) {
  std::map<std::string, std::string> attrs{{"counter", name}};
  if (saturated) attrs["saturated"] = "true", attrs["counter_max"] = std::to_string(static_cast<uint64_t>(v));
  return Obs(Port(hca), kind, v, t, attrs);
}

struct CounterCase {
  ObsKind kind;
  const char* name;
};
// Not special to one counter: a bookkeeping one and a link-health one.
constexpr CounterCase kOverrun{ObsKind::kOther, "excessive_buffer_overrun_errors"};
constexpr CounterCase kIntegrity{ObsKind::kIbLinkIntegrity, "local_link_integrity_errors"};

class FabricDetectIbBaseline : public ::testing::Test {
 protected:
  // One sample of `ports` ACTIVE 400 Gb/s ports, each reading `v` on counter `c`.
  void Sample(IbFabricDetector& d, int ports, CounterCase c, double v, int64_t t, bool saturated) {
    for (int i = 0; i < ports; ++i) {
      d.Observe(Obs(Port(i), ObsKind::kIbPortState, 4, t, {{"state", "ACTIVE"}, {"phys_state", "LinkUp"}}));
      d.Observe(Obs(Port(i), ObsKind::kIbRate, 400, t));
      d.Observe(Counter(i, c.kind, c.name, v, t, saturated));
    }
  }
  static std::vector<Finding> Of(const std::vector<Finding>& fs, FaultClass cls) {
    std::vector<Finding> out;
    for (const Finding& f : fs) {
      if (f.fault_class == cls) out.push_back(f);
    }
    return out;
  }
  static std::string Dump(const std::vector<Finding>& fs) {
    std::string out;
    for (const Finding& f : fs)
      out += f.component.Id() + " " + std::string(ToString(f.fault_class)) + ": " + f.summary + "\n";
    return out;
  }
  FabricOptions opt_;
};

TEST_F(FabricDetectIbBaseline, OneValuePeggedOnEveryPortIsOneNoteNotAFindingPerPort) {
  for (const CounterCase& c : {kOverrun, kIntegrity}) {
    SCOPED_TRACE(c.name);
    IbFabricDetector det(opt_, nullptr);
    for (int s = 0; s < 4; ++s) Sample(det, 8, c, 15, kT0 + s * kMin, true);
    const auto fs = det.Findings();
    EXPECT_TRUE(Of(fs, FaultClass::kIbLinkErrors).empty()) << Dump(fs);
    ASSERT_EQ(fs.size(), 1u) << Dump(fs);
    const Finding& note = fs[0];
    EXPECT_EQ(note.fault_class, FaultClass::kNone);
    EXPECT_EQ(note.severity, Severity::kInfo);
    EXPECT_EQ(note.action, Action::kNone);
    EXPECT_EQ(note.layer, Layer::kFabric);
    EXPECT_EQ(note.component.Id(), "ib");
    EXPECT_EQ(Attr(note, "mode"), "static_baseline");
    EXPECT_EQ(Attr(note, "quirk"), "true");
    EXPECT_EQ(Attr(note, "counter"), c.name);
    EXPECT_EQ(Attr(note, "value"), "15");
    EXPECT_EQ(Attr(note, "ports"), "8");
    EXPECT_EQ(Attr(note, "ports_total"), "8");
    EXPECT_EQ(Attr(note, "link_layer"), "InfiniBand");
    EXPECT_EQ(note.first_ns, kT0);
    EXPECT_EQ(note.last_ns, kT0 + 3 * kMin);
    EXPECT_EQ(note.evidence.size(), 8u);
    EXPECT_NE(note.summary.find(std::string(c.name) + " reads 15 on all 8 InfiniBand ports"), std::string::npos)
        << note.summary;
    EXPECT_NE(note.summary.find("baseline"), std::string::npos) << note.summary;
  }
}

TEST_F(FabricDetectIbBaseline, TheNoteIsNeverADiagnosis) {
  IbFabricDetector det(opt_, nullptr);
  for (int s = 0; s < 3; ++s) Sample(det, 8, kOverrun, 15, kT0 + s * kMin, true);
  IsolateInput in;
  in.findings = det.Findings();
  in.layers_with_data = {Layer::kFabric};
  ASSERT_EQ(in.findings.size(), 1u);
  const std::vector<Diagnosis> ds = Isolate(in);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].fault_class, FaultClass::kNone) << ds[0].summary;
  ASSERT_EQ(ds[0].ruled_out.size(), 1u);
  EXPECT_EQ(ds[0].ruled_out[0].layer, Layer::kFabric);
  // Nor does it keep the fabric from being ruled out for a slow job.
  in.slowdown_reported = true;
  for (const Diagnosis& d : Isolate(in)) EXPECT_NE(d.fault_class, FaultClass::kIbLinkErrors) << d.summary;
}

TEST_F(FabricDetectIbBaseline, APortThatRisesOffTheBaselineIsJudgedByItsRiseAlone) {
  {
    SCOPED_TRACE("link-health counter, same non-zero value everywhere, then one port counts");
    IbFabricDetector det(opt_, nullptr);
    Sample(det, 8, kIntegrity, 7, kT0, false);
    Sample(det, 8, kIntegrity, 7, kT0 + kMin, false);
    det.Observe(Counter(3, kIntegrity.kind, kIntegrity.name, 9, kT0 + 2 * kMin, false));
    const auto fs = det.Findings();
    ASSERT_EQ(fs.size(), 1u) << Dump(fs);
    EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
    EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_3/1");
    EXPECT_NE(fs[0].summary.find("+2 local link integrity errors"), std::string::npos) << fs[0].summary;
  }
  {
    SCOPED_TRACE("pegged everywhere; one port cleared, then pegged again by new errors");
    IbFabricDetector det(opt_, nullptr);
    Sample(det, 8, kOverrun, 15, kT0, true);
    Sample(det, 8, kOverrun, 15, kT0 + kMin, true);
    det.Observe(Counter(3, kOverrun.kind, kOverrun.name, 0, kT0 + 2 * kMin, false));
    det.Observe(Counter(3, kOverrun.kind, kOverrun.name, 15, kT0 + 3 * kMin, true));
    const auto fs = det.Findings();
    const auto errors = Of(fs, FaultClass::kIbLinkErrors);
    ASSERT_EQ(errors.size(), 1u) << Dump(fs);
    EXPECT_EQ(errors[0].component.Id(), "ib/mlx5_3/1");
    EXPECT_EQ(Attr(errors[0], "mode"), "counter_saturated");
    const auto notes = Of(fs, FaultClass::kNone);
    ASSERT_EQ(notes.size(), 1u) << Dump(fs);
    EXPECT_EQ(Attr(notes[0], "ports"), "7");
    EXPECT_EQ(Attr(notes[0], "ports_total"), "8");
    EXPECT_NE(notes[0].summary.find("on 7 of 8 InfiniBand ports"), std::string::npos) << notes[0].summary;
  }
}

TEST_F(FabricDetectIbBaseline, PortsThatDisagreeAreJudgedAsBefore) {
  for (const CounterCase& c : {kOverrun, kIntegrity}) {
    SCOPED_TRACE(c.name);
    IbFabricDetector det(opt_, nullptr);
    for (int s = 0; s < 2; ++s) {
      const int64_t t = kT0 + s * kMin;
      Sample(det, 4, c, 15, t, true);  // mlx5_0..3 pegged
      for (int i = 4; i < 8; ++i) det.Observe(Counter(i, c.kind, c.name, 0, t, false));
    }
    const auto fs = det.Findings();
    EXPECT_TRUE(Of(fs, FaultClass::kNone).empty()) << Dump(fs);
    ASSERT_EQ(fs.size(), 4u) << Dump(fs);
    for (const Finding& f : fs) {
      EXPECT_EQ(f.fault_class, FaultClass::kIbLinkErrors);
      EXPECT_EQ(Attr(f, "mode"), "counter_saturated");
      EXPECT_EQ(f.severity, c.kind == ObsKind::kOther ? Severity::kInfo : Severity::kWarning);
    }
  }
  // Two different non-zero values: no common baseline either.
  IbFabricDetector det(opt_, nullptr);
  det.Observe(Counter(0, ObsKind::kIbLinkDowned, "link_downed", 255, kT0, true));
  det.Observe(Counter(1, ObsKind::kIbLinkDowned, "link_downed", 3, kT0, false));
  const auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].component.Id(), "ib/mlx5_0/1");
  EXPECT_EQ(Attr(fs[0], "mode"), "counter_saturated");
}

TEST_F(FabricDetectIbBaseline, ASinglePortNodeIsJudgedAsBefore) {
  IbFabricDetector det(opt_, nullptr);
  for (int s = 0; s < 3; ++s) Sample(det, 1, kIntegrity, 15, kT0 + s * kMin, true);
  const auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(Attr(fs[0], "mode"), "counter_saturated");
}

TEST_F(FabricDetectIbBaseline, EthernetPortsDoNotBreakTheInfinibandBaseline) {
  IbFabricDetector det(opt_, nullptr);
  Sample(det, 4, kOverrun, 15, kT0, true);
  for (int i = 8; i < 10; ++i) {  // RoCE ports of another NIC, counting nothing
    ComponentRef eth = Port(i);
    eth.keys["link_layer"] = "Ethernet";
    det.Observe(Obs(eth, kOverrun.kind, 0, kT0, {{"counter", kOverrun.name}}));
  }
  const auto fs = det.Findings();
  ASSERT_EQ(fs.size(), 1u) << Dump(fs);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kNone);
  EXPECT_EQ(Attr(fs[0], "ports"), "4");
}

}  // namespace
}  // namespace faultline
