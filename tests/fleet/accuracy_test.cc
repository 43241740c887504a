// Fleet accuracy (issue 25): a pause the whole job shares is the job's, not a node's;
// jitter alone is nobody's; a slow node's class is its own evidence's; a slowdown is
// stated as measured against its peers in the same steps; a node's report does not
// reopen; names of any length cost bounded memory.
#include <gtest/gtest.h>
#include <malloc.h>

#include <regex>
#include <set>
#include <string>

#include "core/sanitizer.h"
#include "fleet/analyzer.h"
#include "fleet/names.h"
#include "fleet_test_util.h"
#include "staggered_job.h"

namespace faultline::fleet {
namespace {

using testing::DiagnosisEnvelope;
using testing::JobPause;
using testing::kSecond;
using testing::kStart;
using testing::MakeTopology;
using testing::StaggeredJob;

std::string Describe(const std::vector<FleetDiagnosis>& ds) {
  std::string s;
  for (const FleetDiagnosis& d : ds) s += "\n  " + d.cause + " " + d.component + ": " + d.summary;
  return s;
}

// The 128-node fleet of the report: 8 racks of 16; the job on 12 nodes, 4 in each of
// racks r0..r2 (so three slow nodes of one rack would make a rack ticket).
std::vector<FleetNode> JobNodes(const FleetTopology& topo) {
  std::vector<FleetNode> nodes;
  for (const FleetNode& n : topo.nodes) {
    const int k = std::stoi(n.name.substr(n.name.find("-n") + 2));
    if ((n.rack == "r0" || n.rack == "r1" || n.rack == "r2") && k < 4) nodes.push_back(n);
  }
  return nodes;
}

// A checkpoint every `every_s` lasting 2.3 report periods, at `factor`.
std::vector<JobPause> Checkpoints(double every_s, double duration_s, double report_s, double factor) {
  std::vector<JobPause> out;
  for (double t = every_s; t < duration_s; t += every_s) out.push_back({t, t + 2.3 * report_s, factor});
  return out;
}

// Healthy jobs with pauses and jitter over many seeds: the sweeps are for accuracy, run
// whole in the normal build and over two seeds (both report forms) under ASan.
class FleetPauses : public ::testing::Test {
 protected:
  FleetTopology topo = MakeTopology(8, 16);
  StaggeredJob Job(uint64_t seed, double jitter) {
    StaggeredJob j;
    j.nodes = JobNodes(topo);
    j.seed = seed;
    j.jitter = jitter;
    return j;
  }
};

TEST_F(FleetPauses, CheckpointsOfTwoAndAThirdReportPeriodsNameNoNode) {
  // With the job's steps in the reports (compared step by step) and without (by time).
  for (const bool steps : {true, false}) {
    for (uint64_t seed = 1; seed <= SweepSize(10, 2); ++seed) {
      SCOPED_TRACE(std::to_string(seed) + (steps ? " by step" : " by time"));
      StaggeredJob j = Job(seed, 0.02);
      j.report_steps = steps;
      j.pauses = Checkpoints(97, 900, j.report_s, 4);
      FleetAnalyzer a(topo);
      const auto out = j.Run(a, 0, 900);
      EXPECT_TRUE(out.empty()) << Describe(out);
    }
  }
}

TEST_F(FleetPauses, EvaluationPassesAndDataStallsWithJitterNameNoNode) {
  for (uint64_t seed = 1; seed <= SweepSize(20, 2); ++seed) {
    SCOPED_TRACE(seed);
    StaggeredJob j = Job(seed, 0.02 + 0.04 * testing::Unit(testing::Hash64("jitter", seed, 0)));
    j.report_steps = seed % 2 == 0;
    j.pauses = Checkpoints(150, 900, j.report_s, 3 + testing::Unit(testing::Hash64("f", seed, 0)) * 2);
    // An evaluation pass every 200 s (half speed for 25 s) and data stalls of 4-9 s at 3-6x.
    for (double t = 200; t < 900; t += 200) j.pauses.push_back({t + 40, t + 65, 2});
    for (int k = 0; k < 6; ++k) {
      const double at = 60 + 800 * testing::Unit(testing::Hash64("stall", seed, static_cast<uint64_t>(k)));
      const double len = 4 + 5 * testing::Unit(testing::Hash64("len", seed, static_cast<uint64_t>(k)));
      j.pauses.push_back({at, at + len, 3 + 3 * testing::Unit(testing::Hash64("sf", seed, static_cast<uint64_t>(k)))});
    }
    FleetAnalyzer a(topo);
    const auto out = j.Run(a, 0, 900);
    EXPECT_TRUE(out.empty()) << "jitter " << j.jitter << Describe(out);
  }
}

TEST_F(FleetPauses, SixPercentJitterAloneNamesNoNode) {
  // A 64-node job too: more nodes, more chances for a run of unlucky samples.
  for (uint64_t seed = 1; seed <= SweepSize(20, 2); ++seed) {
    SCOPED_TRACE(seed);
    StaggeredJob j = Job(seed, 0.06);
    if (seed % 2 == 0) j.nodes.assign(topo.nodes.begin() + 64, topo.nodes.end());
    FleetAnalyzer a(topo);
    const auto out = j.Run(a, 0, 900);
    EXPECT_TRUE(out.empty()) << Describe(out);
  }
}

// "<node> is NN% slower ..." -> NN.
int SummaryPercent(const std::string& summary) {
  std::smatch m;
  if (!std::regex_search(summary, m, std::regex(" is ([0-9]+)% slower"))) return -1;
  return std::stoi(m[1]);
}

TEST_F(FleetPauses, StragglerAmidCheckpointsIsNamedOnceWithItsOwnSlowdown) {
  for (uint64_t seed = 1; seed <= SweepSize(10, 2); ++seed) {
    SCOPED_TRACE(seed);
    StaggeredJob j = Job(seed, 0.03);
    j.report_steps = seed % 2 == 0;
    j.pauses = Checkpoints(61, 900, j.report_s, 3.84 / 1.35);
    j.slowdown = [](const std::string& n, double t) { return n == "r1-n2" && t >= 200 ? 1.35 : 1.0; };
    FleetAnalyzer a(topo);
    const auto out = j.Run(a, 0, 900);
    std::set<std::string> ids;
    for (const FleetDiagnosis& d : out) {
      ASSERT_EQ(d.cause, "straggler") << Describe(out);
      ASSERT_EQ(d.nodes, std::vector<std::string>{"r1-n2"}) << Describe(out);
      EXPECT_GE(d.first_ns, kStart + 200 * kSecond);
      const int pct = SummaryPercent(d.summary);
      EXPECT_GE(pct, 30) << d.summary;
      EXPECT_LE(pct, 40) << d.summary;
      ids.insert(d.id);
    }
    EXPECT_EQ(ids.size(), 1u) << Describe(out);  // named once, never closed and reopened
  }
}

TEST_F(FleetPauses, ThrottlingOnAndOffIsOneReport) {
  // A GPU on a hot cold plate throttles for a minute, recovers for 20 s, throttles again.
  StaggeredJob j = Job(3, 0.02);
  j.pauses = Checkpoints(120, 900, j.report_s, 4);
  auto hot = [](double t) { return t >= 150 && std::fmod(t - 150, 80) < 60; };
  j.slowdown = [hot](const std::string& n, double t) { return n == "r0-n1" && hot(t) ? 1.4 : 1.0; };
  j.clock = [hot](const std::string& n, int gpu, double t) {
    return n == "r0-n1" && gpu == 4 && hot(t) ? 990.0 : 1980.0;
  };
  FleetAnalyzer a(topo);
  std::vector<FleetDiagnosis> out;
  for (double t = 0; t < 900; t += 60) {
    for (auto& d : j.Run(a, t, t + 60)) out.push_back(std::move(d));
    // The node's own isolator says why, again every minute while it lasts.
    const FleetNode& n = j.nodes[1];
    if (t >= 180) {
      a.Ingest(DiagnosisEnvelope(n, static_cast<int64_t>(t), FaultClass::kGpuThermal, GpuComponent("4"),
                                 kStart + static_cast<int64_t>(t) * kSecond));
    }
  }
  ASSERT_FALSE(out.empty());
  std::set<std::string> ids;
  for (const FleetDiagnosis& d : out) ids.insert(d.id);
  EXPECT_EQ(ids.size(), 1u) << Describe(out);
  EXPECT_EQ(out.back().fault_class, FaultClass::kGpuThermal) << out.back().summary;
}

TEST_F(FleetPauses, AReopenedStragglerKeepsItsIdAcrossARestart) {
  StaggeredJob j = Job(4, 0.02);
  auto slow = [](double t) { return t >= 100 && (t < 200 || t >= 300); };  // a 100 s respite
  j.slowdown = [slow](const std::string& n, double t) { return n == "r2-n1" && slow(t) ? 1.4 : 1.0; };
  FleetAnalyzer a(topo);
  const auto first = j.Run(a, 0, 280);
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(a.Open().empty());  // calm again: closed
  FleetAnalyzer b(topo);
  ASSERT_TRUE(b.Restore(a.Snapshot()).ok());
  const auto again = j.Run(b, 280, 500);
  EXPECT_TRUE(again.empty()) << Describe(again);  // the same report, nothing changed: not returned again
  ASSERT_EQ(b.Open().size(), 1u);
  EXPECT_EQ(b.Open()[0].id, first.front().id);
  // Past the window after it closed, it is a new report.
  FleetAnalyzer c(topo);
  j.rows.clear();
  j.reports.clear();
  j.slowdown = [](const std::string& n, double t) {
    return n == "r2-n1" && t >= 100 && (t < 200 || t >= 900) ? 1.4 : 1.0;
  };
  const auto early = j.Run(c, 0, 900);
  const auto late = j.Run(c, 900, 1000);
  ASSERT_FALSE(early.empty());
  ASSERT_FALSE(late.empty());
  EXPECT_NE(late.front().id, early.front().id);
}

// ---- the slow node's class ----

class FleetStragglerClass : public ::testing::Test {
 protected:
  FleetTopology topo = MakeTopology(4, 4);
  testing::JobStream stream;
  void SetUp() override {
    stream.topology = &topo;
    stream.slowdown = [](const std::string& n, int step) { return n == "r2-n1" && step >= 20 ? 1.3 : 1.0; };
    stream.clock = [](const std::string& n, int gpu, int step) {
      return n == "r2-n1" && gpu == 6 && step >= 20 ? 1050.0 : 1410.0;
    };
  }
  std::vector<FleetDiagnosis> Feed(FleetAnalyzer& a, int from, int to) {
    std::vector<FleetDiagnosis> all;
    for (int step = from; step < to; ++step) {
      for (const Envelope& e : stream.Steps(step, step + 1)) a.Ingest(e);
      for (auto& d : a.Evaluate(testing::StepTime(step))) all.push_back(std::move(d));
    }
    return all;
  }
};

TEST_F(FleetStragglerClass, GpuStragglerTakesTheClassOfItsOwnPublishedDiagnosis) {
  FleetAnalyzer a(topo);
  // Only the node's diagnosis (no finding, no throttle reasons reached the fleet).
  Envelope diag =
      DiagnosisEnvelope(*topo.FindNode("r2-n1"), 9, FaultClass::kGpuThermal, GpuComponent("6"), testing::StepTime(21));
  diag.diagnosis->layer = Layer::kGpu;
  diag.diagnosis->action = Action::kCordon;
  diag.diagnosis->severity = Severity::kWarning;
  a.Ingest(diag);
  const auto out = Feed(a, 0, 40);
  ASSERT_FALSE(out.empty());
  for (const FleetDiagnosis& d : out) {
    EXPECT_EQ(d.component, "node/r2-n1/gpu/6");
    EXPECT_EQ(d.fault_class, FaultClass::kGpuThermal) << d.summary;
    EXPECT_EQ(d.action, Action::kCordon) << d.summary;
    EXPECT_EQ(d.linked, std::vector<std::string>{"r2-n1#9"});
  }
}

TEST_F(FleetStragglerClass, WithoutHardwareEvidenceItIsTheWorkloads) {
  stream.clock = [](const std::string&, int, int) { return 1410.0; };
  FleetAnalyzer a(topo);
  const auto out = Feed(a, 0, 40);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].component, "node/r2-n1");
  EXPECT_EQ(out[0].fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(out[0].action, Action::kNotifyUser);
}

TEST_F(FleetStragglerClass, ADiagnosisThatNamesNoHardwareDoesNotDecide) {
  stream.clock = [](const std::string&, int, int) { return 1410.0; };
  FleetAnalyzer a(topo);
  a.Ingest(DiagnosisEnvelope(*topo.FindNode("r2-n1"), 4, FaultClass::kWorkloadImbalance, HostComponent(),
                             testing::StepTime(22)));
  const auto out = Feed(a, 0, 40);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().fault_class, FaultClass::kWorkloadImbalance);
  EXPECT_EQ(out.back().action, Action::kNotifyUser);
}

// ---- names ----

TEST(FleetNames, ALongNameIsCutToItsPrefixAndAHash) {
  EXPECT_EQ(BoundName("gpu-017"), "gpu-017");
  const std::string a = std::string(300, 'n') + "-a", b = std::string(300, 'n') + "-b";
  const std::string ca = BoundName(a), cb = BoundName(b);
  EXPECT_EQ(ca.size(), kMaxNameBytes);
  EXPECT_NE(ca, cb);            // distinct past the cut, distinct after it
  EXPECT_EQ(ca, BoundName(a));  // and the same every time
  EXPECT_EQ(ca.substr(0, 239), a.substr(0, 239));
  EXPECT_EQ(ca[239], '~');
  // A cut never splits a UTF-8 character: "é" is two bytes.
  std::string accents;
  while (accents.size() < 400) accents += "\xc3\xa9";
  const std::string cut = BoundName(accents);
  EXPECT_LE(cut.size(), kMaxNameBytes);
  EXPECT_EQ(cut.find('~') % 2, 0u);
  std::string text(5000, 't');
  EXPECT_TRUE(CutText(text, 100));
  EXPECT_EQ(text.size(), 100u);
  EXPECT_EQ(text.substr(97), "...");
}

TEST(FleetNames, NodesBeyondTheStateBoundAreRefusedAndCounted) {
  const FleetTopology topo;
  AnalyzerOptions o;
  o.max_state_bytes = 64 * 1024;
  FleetAnalyzer a(topo, o);
  for (int i = 0; i < 200; ++i) {
    Envelope e = DiagnosisEnvelope({.name = "n" + std::to_string(i), .rack = "r"}, 1, FaultClass::kPowerSupply,
                                   {ComponentType::kPsu, "PSU1", {}}, kStart);
    a.Ingest(e);
  }
  EXPECT_LT(a.nodes(), 200u);
  EXPECT_EQ(a.stats().refused, 200 - a.nodes());
  a.Evaluate(kStart + kSecond);
  EXPECT_LT(a.ApproxStateBytes(), 2 * o.max_state_bytes);
}

size_t HeapInUse() { return mallinfo2().uordblks; }

TEST(FleetNames, LongNamesAreCutWithAHashAndTheStateStaysSmall) {
  constexpr size_t kNodes = 400;
  const std::string long_part(60'000, 'x');
  const FleetTopology topo;  // none of these nodes is in the topology
  FleetAnalyzer a(topo);
  const size_t heap0 = HeapInUse();
  auto name_of = [&](size_t i) { return long_part + "-" + std::to_string(i); };  // differ only past the cut
  for (int step = 0; step < 12; ++step) {
    for (size_t i = 0; i < kNodes; ++i) {
      Envelope e;
      e.kind = RecordKind::kObservations;
      e.place = {.site = long_part, .rack = long_part + "-rack", .node = name_of(i)};
      e.msg_id = "m/" + std::to_string(step) + "/" + std::to_string(i);
      Observation o;
      o.time_ns = kStart + step * kSecond;
      o.node = e.place.node;
      o.layer = Layer::kWorkload;
      o.kind = ObsKind::kStepTime;
      o.source = Source::kWorkload;
      o.value = (i == 7 && step >= 4 ? 1.5 : 1.0) * (1 + testing::Jitter(std::to_string(i), step, 0.01));
      o.attrs = {{"job", long_part + "-job"}};
      e.observations.push_back(o);
      for (int g = 0; g < 4; ++g) {
        Observation c = o;
        c.layer = Layer::kGpu;
        c.kind = ObsKind::kClock;
        c.source = Source::kNvml;
        c.component = GpuComponent(long_part + std::to_string(g));
        c.value = 1410;
        c.attrs = {{"clock", "sm"}};
        e.observations.push_back(c);
      }
      a.Ingest(e);
    }
  }
  // Records as long as the wire allows: their strings are cut as they are held.
  for (size_t i = 0; i < kNodes; ++i) {
    Envelope d = DiagnosisEnvelope({.name = name_of(i), .rack = "r"}, 1, FaultClass::kPowerSupply,
                                   {ComponentType::kPsu, long_part, {{long_part, long_part}}}, kStart);
    d.diagnosis->summary = long_part;
    d.diagnosis->evidence.assign(
        4, {.time_ns = kStart, .source = Source::kRedfish, .component = long_part, .text = long_part});
    a.Ingest(d);
  }
  const auto out = a.Evaluate(kStart + 12 * kSecond);
  EXPECT_EQ(a.nodes(), kNodes);  // cut names stay distinct
  EXPECT_LT(a.ApproxStateBytes(), kNodes * 16 * 1024);
  EXPECT_LT(HeapInUse() - heap0, kNodes * 32 * 1024) << "heap grew by " << (HeapInUse() - heap0);
  EXPECT_EQ(a.stats().names_cut, kNodes * 13);  // every envelope's node, rack and site
  ASSERT_EQ(out.size(), 1u) << Describe(out);
  ASSERT_EQ(out[0].nodes.size(), 1u);
  const std::string& named = out[0].nodes[0];
  EXPECT_LE(named.size(), 256u);
  EXPECT_EQ(named.rfind(long_part.substr(0, 200), 0), 0u);  // it begins as the name did
  EXPECT_NE(named.find('~'), std::string::npos);            // and says it was cut
}

}  // namespace
}  // namespace faultline::fleet
