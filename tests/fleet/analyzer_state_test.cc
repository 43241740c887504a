// The analyzer under at-least-once delivery: duplicates, reordering, restarts, hostile input.
#include <gtest/gtest.h>

#include <algorithm>

#include "fleet/analyzer.h"
#include "fleet/dedup.h"
#include "fleet_test_util.h"

namespace faultline::fleet {
namespace {

using testing::DiagnosisEnvelope;
using testing::JobStream;
using testing::MakeTopology;
using testing::StepTime;

// A straggler and a PDU fault in one stream, one evaluation per step.
struct Scenario {
  FleetTopology topo = MakeTopology(4, 4);
  std::vector<std::vector<Envelope>> steps;  // envelopes delivered before each evaluation

  Scenario() {
    JobStream s;
    s.topology = &topo;
    s.slowdown = [](const std::string& n, int step) { return n == "r3-n1" && step >= 12 ? 1.3 : 1.0; };
    s.clock = [](const std::string& n, int gpu, int step) {
      return n == "r3-n1" && gpu == 2 && step >= 12 ? 990.0 : 1410.0;
    };
    for (int step = 0; step < 30; ++step) {
      steps.push_back(s.Steps(step, step + 1));
      if (step == 8) {
        steps.back().push_back(DiagnosisEnvelope(topo.nodes[4], 21, FaultClass::kPowerSupply,
                                                 {ComponentType::kPsu, "PSU1", {}}, StepTime(8)));
      }
      if (step == 14) {
        steps.back().push_back(DiagnosisEnvelope(topo.nodes[5], 3, FaultClass::kPowerSupply,
                                                 {ComponentType::kPsu, "PSU0", {}}, StepTime(14)));
      }
    }
  }
};

std::vector<FleetDiagnosis> RunAll(FleetAnalyzer& a, const Scenario& s, size_t from, size_t to) {
  std::vector<FleetDiagnosis> out;
  for (size_t i = from; i < to; ++i) {
    for (const Envelope& e : s.steps[i]) a.Ingest(e);
    for (auto& d : a.Evaluate(StepTime(static_cast<int>(i)))) out.push_back(std::move(d));
  }
  return out;
}

TEST(AnalyzerState, ScenarioFindsBoth) {
  Scenario s;
  FleetAnalyzer a(s.topo);
  const auto out = RunAll(a, s, 0, s.steps.size());
  std::vector<std::string> comps;
  for (const auto& d : a.Open()) comps.push_back(d.component);
  EXPECT_EQ(comps, (std::vector<std::string>{"pdu/pdu-r1", "node/r3-n1/gpu/2"}));
  EXPECT_GE(out.size(), 2u);
}

TEST(AnalyzerState, DuplicateDeliveryChangesNothing) {
  Scenario s;
  FleetAnalyzer once(s.topo), twice(s.topo);
  const auto a = RunAll(once, s, 0, s.steps.size());
  std::vector<FleetDiagnosis> b;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    for (const Envelope& e : s.steps[i]) {
      twice.Ingest(e);
      twice.Ingest(e);  // redelivered: same message id
    }
    for (auto& d : twice.Evaluate(StepTime(static_cast<int>(i)))) b.push_back(std::move(d));
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(once.Open(), twice.Open());
  EXPECT_EQ(twice.stats().observations, once.stats().observations);
  EXPECT_EQ(twice.stats().duplicates, twice.stats().envelopes / 2);
}

TEST(AnalyzerState, ResentRowsUnderANewMessageIdAreDroppedByRowId) {
  Scenario s;
  FleetAnalyzer a(s.topo);
  RunAll(a, s, 0, 10);
  const IngestStats before = a.stats();
  // The agent re-publishes a stored batch after a restart with a fresh message id.
  Envelope again = s.steps[5][3];
  again.msg_id += "-retry";
  a.Ingest(again);
  EXPECT_EQ(a.stats().observations, before.observations);
  EXPECT_EQ(a.stats().duplicates, before.duplicates + again.observations.size());
  // A diagnosis row re-sent likewise.
  Envelope d = s.steps[8].back();
  ASSERT_EQ(d.kind, RecordKind::kDiagnosis);
  d.msg_id += "-retry";
  a.Ingest(d);
  EXPECT_EQ(a.stats().records, before.records);
}

TEST(AnalyzerState, BatchesWithoutRowIdsAreDeduplicatedByMessageIdOnly) {
  Scenario s;
  FleetAnalyzer a(s.topo);
  Envelope none = s.steps[0][0];
  none.observation_ids.clear();
  Envelope zeros = s.steps[0][1];
  std::fill(zeros.observation_ids.begin(), zeros.observation_ids.end(), 0);
  a.Ingest(none);
  a.Ingest(zeros);
  a.Ingest(zeros);  // same message id: dropped
  Envelope zeros_again = zeros;
  zeros_again.msg_id += "-2";  // a new id and no row ids: taken (nothing says it is a repeat)
  a.Ingest(zeros_again);
  const size_t n = none.observations.size();
  EXPECT_EQ(a.stats().observations, n + 2 * zeros.observations.size());
  EXPECT_EQ(a.stats().duplicates, 1u);
}

TEST(AnalyzerState, AgentWithARecreatedStoreIsNotTakenForARepeat) {
  FleetTopology topo = MakeTopology(1, 4);
  JobStream s;
  s.topology = &topo;
  FleetAnalyzer a(topo);
  for (const Envelope& e : s.Steps(0, 5)) a.Ingest(e);
  const size_t before = a.stats().observations;
  // r0-n0's store is recreated: its row ids start at 1 again, on newer observations.
  s.rows.erase("r0-n0");
  Envelope fresh = s.Batch(topo.nodes[0], 6);
  ASSERT_EQ(fresh.observation_ids.front(), 1);
  fresh.msg_id += "@store-2";  // the publisher names the store's identity in its message ids
  a.Ingest(fresh);
  EXPECT_EQ(a.stats().observations, before + fresh.observations.size());
  EXPECT_EQ(a.stats().duplicates, 0u);
}

TEST(AnalyzerState, OutOfOrderEnvelopesGiveTheSameAnswer) {
  Scenario s;
  FleetAnalyzer ordered(s.topo), shuffled(s.topo);
  RunAll(ordered, s, 0, s.steps.size());
  // Everything delivered in a scrambled order (each step's batches reversed, steps
  // interleaved in pairs), judged once at the end.
  std::vector<Envelope> all;
  for (size_t i = 0; i + 1 < s.steps.size(); i += 2) {
    for (auto it = s.steps[i + 1].rbegin(); it != s.steps[i + 1].rend(); ++it) all.push_back(*it);
    for (auto it = s.steps[i].rbegin(); it != s.steps[i].rend(); ++it) all.push_back(*it);
  }
  for (const Envelope& e : all) shuffled.Ingest(e);
  const int64_t end = StepTime(static_cast<int>(s.steps.size()) - 1);
  shuffled.Evaluate(end);
  FleetAnalyzer ordered_once(s.topo);
  for (const auto& step : s.steps) {
    for (const Envelope& e : step) ordered_once.Ingest(e);
  }
  ordered_once.Evaluate(end);
  EXPECT_EQ(shuffled.Open(), ordered_once.Open());
  ASSERT_EQ(shuffled.Open().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(Json(shuffled.Open()[i]).dump(1), Json(ordered_once.Open()[i]).dump(1));
  }
}

TEST(AnalyzerState, SnapshotRestoreMidStreamEqualsUninterrupted) {
  Scenario s;
  for (size_t cut : {size_t{5}, size_t{13}, size_t{20}}) {
    FleetAnalyzer whole(s.topo);
    const auto expected_before = RunAll(whole, s, 0, cut);
    const auto expected_after = RunAll(whole, s, cut, s.steps.size());

    FleetAnalyzer first(s.topo);
    EXPECT_EQ(RunAll(first, s, 0, cut), expected_before);
    const std::string snap = first.Snapshot();
    FleetAnalyzer restarted(s.topo);
    ASSERT_TRUE(restarted.Restore(snap).ok());
    EXPECT_EQ(restarted.Snapshot(), snap);
    // The restarted analyzer is redelivered the last step too (its ack was lost).
    for (const Envelope& e : s.steps[cut - 1]) restarted.Ingest(e);
    EXPECT_EQ(RunAll(restarted, s, cut, s.steps.size()), expected_after) << "cut " << cut;
    EXPECT_EQ(restarted.Open(), whole.Open());
    EXPECT_EQ(restarted.stats().observations, whole.stats().observations);
  }
}

TEST(AnalyzerState, RestoreRefusesWhatIsNotASnapshot) {
  FleetTopology topo = MakeTopology(1, 2);
  FleetAnalyzer a(topo);
  for (std::string_view bad : {"", "{}", "[1]", "{\"faultline_fleet_snapshot\":99}",
                               "{\"faultline_fleet_snapshot\":1,\"stats\":{}}", "not json at all"}) {
    Status st = a.Restore(bad);
    EXPECT_EQ(st.code(), StatusCode::kCorrupt) << bad;
  }
  FleetAnalyzer used(topo);
  used.Ingest(DiagnosisEnvelope(topo.nodes[0], 1, FaultClass::kPowerSupply, {}, StepTime(1)));
  EXPECT_EQ(used.Restore(a.Snapshot()).code(), StatusCode::kInvalidArgument);
}

// Nodes are taken out of the snapshot as it is parsed (never the whole document at once):
// whatever sits where the nodes belong and is not a node is refused, and nothing of a
// refused snapshot is kept.
TEST(AnalyzerState, RestoreRefusesNodesOfAnyOtherShape) {
  FleetTopology topo = MakeTopology(1, 2);
  FleetAnalyzer a(topo);
  a.Ingest(DiagnosisEnvelope(topo.nodes[0], 1, FaultClass::kPowerSupply, {}, StepTime(1)));
  a.Ingest(DiagnosisEnvelope(topo.nodes[1], 2, FaultClass::kPowerSupply, {}, StepTime(1)));
  Json good = Json::parse(a.Snapshot());
  ASSERT_EQ(good.at("nodes").size(), 2u);
  std::vector<Json> bad;
  for (Json nodes : {Json::array({1, 2}), Json::object({{"x", good["nodes"][0]}}), Json(nullptr),
                     Json::array({good["nodes"][0], good["nodes"][0]}), Json::array({good["nodes"][0], 7})}) {
    Json b = good;
    b["nodes"] = nodes;
    bad.push_back(b);
  }
  Json no_nodes = good;
  no_nodes.erase("nodes");
  bad.push_back(no_nodes);
  Json wrong_type = good;
  wrong_type["nodes"][1]["name"] = 42;
  bad.push_back(wrong_type);
  for (const Json& b : bad) {
    FleetAnalyzer fresh(topo);
    EXPECT_EQ(fresh.Restore(b.dump()).code(), StatusCode::kCorrupt) << b["nodes"].dump().substr(0, 80);
    EXPECT_EQ(fresh.nodes(), 0u);
    EXPECT_TRUE(fresh.Restore(good.dump()).ok()) << "a refused snapshot leaves the analyzer fresh";
    EXPECT_EQ(fresh.nodes(), 2u);
  }
}

TEST(AnalyzerState, HostileMessagesAreRefusedAndCounted) {
  FleetTopology topo = MakeTopology(1, 4);
  AnalyzerOptions o;
  o.max_nodes = 2;
  FleetAnalyzer a(topo, o);
  WireLimits small;
  small.max_message_bytes = 4096;
  EXPECT_FALSE(a.IngestMessage("garbage").ok());
  EXPECT_FALSE(a.IngestMessage(std::string(5000, '{'), small).ok());
  JobStream s;
  s.topology = &topo;
  const auto batches = s.Steps(0, 1);
  EXPECT_TRUE(a.IngestMessage(Encode(batches[0])).ok());
  EXPECT_EQ(a.IngestMessage(Encode(batches[0])).code(), StatusCode::kOk);  // a duplicate is not an error
  a.Ingest(batches[1]);
  a.Ingest(batches[2]);  // a third node: over max_nodes
  Envelope no_payload;
  no_payload.kind = RecordKind::kDiagnosis;
  no_payload.place.node = "r0-n0";
  a.Ingest(no_payload);
  Envelope mismatched = batches[0];
  mismatched.observation_ids.pop_back();
  a.Ingest(mismatched);
  EXPECT_EQ(a.stats().refused, 5u);
  EXPECT_EQ(a.stats().duplicates, 1u);
  EXPECT_EQ(a.nodes(), 2u);
  EXPECT_EQ(a.stats().observations, 2 * batches[0].observations.size());
}

TEST(AnalyzerState, StatePerNodeIsBounded) {
  FleetTopology topo = MakeTopology(2, 8);
  JobStream s;
  s.topology = &topo;
  AnalyzerOptions o;
  o.max_msg_ids = 1000;  // reached within the first 200 steps
  FleetAnalyzer a(topo, o);
  for (int step = 0; step < 200; ++step) {
    for (const Envelope& e : s.Steps(step, step + 1)) a.Ingest(e);
  }
  for (int i = 0; i < 100; ++i) {
    a.Ingest(DiagnosisEnvelope(topo.nodes[0], 100 + i, FaultClass::kHbmSbeAging, GpuComponent("1"), StepTime(i)));
  }
  a.Evaluate(StepTime(200));
  const size_t after_200 = a.ApproxStateBytes();
  for (int step = 200; step < 600; ++step) {
    for (const Envelope& e : s.Steps(step, step + 1)) a.Ingest(e);
  }
  a.Evaluate(StepTime(600));
  // More samples do not grow the state: each series keeps its newest max_samples.
  EXPECT_LE(a.ApproxStateBytes(), after_200);
  EXPECT_LT(a.ApproxStateBytes() / a.nodes(), 16u * 1024);
}

TEST(MsgIdWindow, ForgetsTheOldestPastCapacity) {
  MsgIdWindow w(3);
  EXPECT_TRUE(w.Insert("a"));
  EXPECT_FALSE(w.Insert("a"));
  EXPECT_TRUE(w.Insert("b"));
  EXPECT_TRUE(w.Insert("c"));
  EXPECT_TRUE(w.Insert("d"));  // "a" forgotten
  EXPECT_TRUE(w.Insert("a"));
  EXPECT_FALSE(w.Insert("d"));
  EXPECT_EQ(w.size(), 3u);
  MsgIdWindow r(3);
  ASSERT_TRUE(r.FromJson(w.ToJson()));
  EXPECT_FALSE(r.Insert("c"));
  EXPECT_TRUE(r.Insert("e"));  // evicts the oldest: "c"'s successor order kept
  EXPECT_TRUE(r.Insert("zz"));
}

TEST(RowRanges, MergesAndBounds) {
  RowRanges r;
  r.Add(1, 10);
  r.Add(11, 20);
  EXPECT_EQ(r.ranges(), 1u);
  EXPECT_TRUE(r.Contains(15));
  EXPECT_FALSE(r.Contains(21));
  r.Add(30, 30);
  EXPECT_FALSE(r.Contains(25));
  EXPECT_TRUE(r.Contains(30));
  for (int64_t i = 0; i < 40; ++i) r.Add(100 + 10 * i, 100 + 10 * i);
  EXPECT_LE(r.ranges(), RowRanges::kMaxRanges);
  EXPECT_TRUE(r.Contains(490));
  EXPECT_TRUE(r.Contains(5));
  RowRanges back;
  ASSERT_TRUE(back.FromJson(r.ToJson()));
  EXPECT_EQ(back.ToJson(), r.ToJson());
}

}  // namespace
}  // namespace faultline::fleet
