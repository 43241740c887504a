// The simulated agents' envelope packer: a node's consecutive observation batches joined
// within the size, count and hold bounds, every row carried once and in order, msg ids
// that name the rows, deterministic (a re-publish is the same messages), records keeping
// their place, and the analyzer deduplicating a re-sent packed batch whatever its packing.
#include "sim/fleet/envelope_packer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fleet/analyzer.h"
#include "fleet/wire.h"
#include "sim/fleet/fleet_bench.h"
#include "sim/fleet/fleet_sim.h"

namespace faultline::sim {
namespace {

using fleet::Envelope;
using fleet::RecordKind;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'780'000'000 * kSec;

// Node `node`'s batch of `n` observations with rows first.., sent at `t` seconds.
Envelope NodeBatch(const std::string& node, int64_t first, size_t n, int64_t t) {
  Envelope e;
  e.kind = RecordKind::kObservations;
  e.place = {.site = "s", .rack = "r1", .node = node};
  e.sent_ns = kT0 + t * kSec;
  for (size_t i = 0; i < n; ++i) {
    Observation o;
    o.time_ns = e.sent_ns - static_cast<int64_t>(i);
    o.node = node;
    o.layer = Layer::kGpu;
    o.component = GpuComponent(std::to_string(i % 8));
    o.kind = ObsKind::kPower;
    o.value = 400.0 + static_cast<double>(first + static_cast<int64_t>(i));
    o.source = Source::kNvml;
    e.observations.push_back(o);
    e.observation_ids.push_back(first + static_cast<int64_t>(i));
  }
  e.msg_id = fleet::MakeMsgId(node, e.kind, first, first + static_cast<int64_t>(n) - 1);
  return e;
}

Envelope DiagnosisRecord(const std::string& node, int64_t row, int64_t t) {
  Envelope e;
  e.kind = RecordKind::kDiagnosis;
  e.place = {.site = "s", .rack = "r1", .node = node};
  e.sent_ns = kT0 + t * kSec;
  e.row_id = row;
  e.msg_id = fleet::MakeMsgId(node, e.kind, row, row);
  Diagnosis d;
  d.fault_class = FaultClass::kGpuThermal;
  d.component = GpuComponent("1");
  e.diagnosis = d;
  return e;
}

// Three nodes publishing 6-observation batches every 5 s for `seconds`, a diagnosis of
// node b at 40 s.
std::vector<std::vector<Envelope>> Schedule(int64_t seconds) {
  std::vector<std::vector<Envelope>> steps;
  std::map<std::string, int64_t> next_row{{"a", 1}, {"b", 1}, {"c", 1}};
  for (int64_t t = 5; t <= seconds; t += 5) {
    std::vector<Envelope> step;
    for (auto& [node, row] : next_row) {
      step.push_back(NodeBatch(node, row, 6, t));
      row += 6;
    }
    if (t == 40) step.push_back(DiagnosisRecord("b", 1, t));
    steps.push_back(std::move(step));
  }
  return steps;
}

std::vector<Envelope> Pack(const std::vector<std::vector<Envelope>>& steps, const EnvelopePackOptions& o) {
  EnvelopePacker packer(o);
  std::vector<Envelope> out;
  for (const std::vector<Envelope>& step : steps) {
    for (const Envelope& e : step) packer.Add(e, out);
    packer.FlushDue(step.front().sent_ns, out);
  }
  packer.Flush(out);
  EXPECT_EQ(packer.held_observations(), 0u);
  return out;
}

// Per node: every (row id, observation) in the order sent, and the records' places.
struct NodeStream {
  std::vector<int64_t> rows;
  std::vector<double> values;
  std::vector<size_t> record_after;  // observations sent before each record
};

std::map<std::string, NodeStream> Streams(const std::vector<Envelope>& envs) {
  std::map<std::string, NodeStream> m;
  for (const Envelope& e : envs) {
    NodeStream& s = m[e.place.node];
    if (e.kind != RecordKind::kObservations) {
      s.record_after.push_back(s.rows.size());
      continue;
    }
    for (size_t i = 0; i < e.observations.size(); ++i) {
      s.rows.push_back(e.observation_ids[i]);
      s.values.push_back(*e.observations[i].value);
    }
  }
  return m;
}

std::vector<Envelope> Flatten(const std::vector<std::vector<Envelope>>& steps) {
  std::vector<Envelope> all;
  for (const auto& s : steps) all.insert(all.end(), s.begin(), s.end());
  return all;
}

TEST(EnvelopePacker, JoinsANodesBatchesWithinTheBoundsAndKeepsEveryRowInOrder) {
  const auto steps = Schedule(300);
  const auto plain = Flatten(steps);
  for (size_t max_bytes : {size_t{2000}, size_t{6000}, size_t{64} << 10}) {
    EnvelopePackOptions o;
    o.max_bytes = max_bytes;
    o.max_hold_ns = 3600 * kSec;
    const std::vector<Envelope> packed = Pack(steps, o);
    EXPECT_LT(packed.size(), plain.size()) << max_bytes;
    for (const Envelope& e : packed) {
      if (e.kind != RecordKind::kObservations) continue;
      const std::string bytes = fleet::Encode(e);
      EXPECT_LE(bytes.size(), max_bytes) << e.msg_id;
      // The msg id names exactly the consecutive rows carried.
      ASSERT_FALSE(e.observation_ids.empty());
      for (size_t i = 1; i < e.observation_ids.size(); ++i) {
        EXPECT_EQ(e.observation_ids[i], e.observation_ids[i - 1] + 1);
      }
      EXPECT_EQ(e.msg_id, fleet::MakeMsgId(e.place.node, e.kind, e.observation_ids.front(), e.observation_ids.back()));
      auto back = fleet::Decode(bytes);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(*back, e);
    }
    // Every row once, in each node's order; the diagnosis after the rows sent before it.
    const auto want = Streams(plain), got = Streams(packed);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [node, s] : want) {
      EXPECT_EQ(got.at(node).rows, s.rows) << node;
      EXPECT_EQ(got.at(node).values, s.values) << node;
      EXPECT_EQ(got.at(node).record_after, s.record_after) << node;
    }
  }
}

TEST(EnvelopePacker, NoRowIsHeldLongerThanTheHold) {
  const auto steps = Schedule(300);
  for (int64_t hold_s : {0, 4, 5, 12, 60}) {
    EnvelopePackOptions o;
    o.max_hold_ns = hold_s * kSec;
    const std::vector<Envelope> packed = Pack(steps, o);
    size_t joined = 0;
    for (const Envelope& e : packed) {
      if (e.kind != RecordKind::kObservations) continue;
      // Its first row came with the batch sent at (its newest observation time); the
      // packed envelope goes no later than the hold after that batch.
      const int64_t first_batch_ns = e.observations.front().time_ns;
      EXPECT_LE(e.sent_ns - first_batch_ns, hold_s * kSec) << e.msg_id;
      joined = std::max(joined, e.observations.size() / 6);
    }
    // Batches come every 5 s: a hold of h joins floor(h / 5) + 1 of them at most, and that
    // many when nothing else cuts (the diagnosis only cuts node b).
    EXPECT_EQ(joined, static_cast<size_t>(hold_s / 5 + 1)) << hold_s;
  }
}

TEST(EnvelopePacker, FlushDueSendsWhatWaitedItsHoldEvenWithoutNewBatches) {
  EnvelopePackOptions o;
  o.max_hold_ns = 10 * kSec;
  EnvelopePacker packer(o);
  std::vector<Envelope> out;
  packer.Add(NodeBatch("a", 1, 3, 0), out);
  packer.Add(NodeBatch("a", 4, 3, 5), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(packer.held_observations(), 6u);
  packer.FlushDue(kT0 + 9 * kSec, out);
  EXPECT_TRUE(out.empty());
  packer.FlushDue(kT0 + 10 * kSec, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].msg_id, "a/obs/1-6");
  EXPECT_EQ(out[0].sent_ns, kT0 + 5 * kSec);
  EXPECT_EQ(packer.held_observations(), 0u);
}

TEST(EnvelopePacker, NeverJoinsRowsThatDoNotFollowOnOrOtherNodesOrPastTheCount) {
  EnvelopePackOptions o;
  o.max_hold_ns = 3600 * kSec;
  o.max_observations = 8;
  EnvelopePacker packer(o);
  std::vector<Envelope> out;
  packer.Add(NodeBatch("a", 1, 3, 0), out);
  packer.Add(NodeBatch("b", 4, 3, 0), out);   // another node: held apart
  packer.Add(NodeBatch("a", 10, 3, 1), out);  // a gap in a's rows: a/obs/1-3 goes first
  packer.Add(NodeBatch("a", 13, 3, 2), out);
  packer.Add(NodeBatch("a", 16, 3, 3), out);  // 9 > 8 observations: a/obs/10-15 goes
  Envelope no_ids = NodeBatch("b", 7, 2, 4);
  no_ids.observation_ids.clear();  // a publisher without row ids: passes as it is, after b's rows
  packer.Add(no_ids, out);
  packer.Flush(out);
  std::vector<std::string> ids;
  for (const Envelope& e : out) ids.push_back(e.msg_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a/obs/1-3", "a/obs/10-15", "b/obs/4-6", "b/obs/7-8", "a/obs/16-18"}));
}

TEST(EnvelopePacker, ABatchAloneOverTheBoundPassesAsItIsAndZeroMeansNoPacking) {
  EnvelopePackOptions o;
  o.max_bytes = 500;
  o.max_hold_ns = 3600 * kSec;
  EnvelopePacker packer(o);
  std::vector<Envelope> out;
  const Envelope big = NodeBatch("a", 1, 40, 0);
  ASSERT_GT(fleet::Encode(big).size(), 500u);
  packer.Add(big, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], big);
  o.max_bytes = 0;
  EnvelopePacker off(o);
  out.clear();
  for (const Envelope& e : Flatten(Schedule(60))) off.Add(e, out);
  EXPECT_EQ(out, Flatten(Schedule(60)));
  EXPECT_EQ(off.held_observations(), 0u);
}

TEST(EnvelopePacker, ARepublishIsTheSameMessagesAndTheAnalyzerDropsEveryRepeat) {
  const auto steps = Schedule(300);
  EnvelopePackOptions o;
  o.max_bytes = 4000;
  o.max_hold_ns = 3600 * kSec;
  const std::vector<Envelope> first = Pack(steps, o), again = Pack(steps, o);
  ASSERT_EQ(first.size(), again.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(fleet::Encode(first[i]), fleet::Encode(again[i]));

  fleet::FleetAnalyzer analyzer(fleet::FleetTopology{}, {});
  for (const Envelope& e : first) analyzer.Ingest(e);
  const size_t taken = analyzer.stats().observations;
  EXPECT_EQ(taken, 3u * 60u * 6u);  // 3 nodes, a batch of 6 every 5 s for 300 s
  // The same messages again (a redelivery): dropped by msg id.
  for (const Envelope& e : again) analyzer.Ingest(e);
  EXPECT_EQ(analyzer.stats().observations, taken);
  // The same rows packed otherwise (an agent re-sending after a restart, with other cuts):
  // new msg ids, dropped row by row.
  o.max_bytes = 9000;
  const size_t dups = analyzer.stats().duplicates;
  for (const Envelope& e : Pack(steps, o)) analyzer.Ingest(e);
  EXPECT_EQ(analyzer.stats().observations, taken);
  EXPECT_GT(analyzer.stats().duplicates, dups);
}

TEST(EnvelopePacker, PackedSimulatedFleetCarriesWhatTheAgentsPublished) {
  FleetBenchSpec spec;
  spec.nodes = 40;
  spec.duration_s = 600;
  const FleetScenario sc = GenerateBenchFleet(spec);
  FleetSim sim(sc);
  EnvelopePackOptions o;
  o.max_hold_ns = 120 * kSec;
  EnvelopePacker packer(o);
  std::vector<Envelope> plain, packed, step;
  for (double t = 1; t <= sc.duration_s; t += 1) {
    step.clear();
    sim.AdvanceTo(t, step);
    plain.insert(plain.end(), step.begin(), step.end());
    for (Envelope& e : step) packer.Add(std::move(e), packed);
    packer.FlushDue(sim.TimeNs(t), packed);
  }
  packer.Flush(packed);
  EXPECT_LT(packed.size() * 5, plain.size());  // 5 s batches held up to 120 s
  const auto want = Streams(plain), got = Streams(packed);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [node, s] : want) {
    EXPECT_EQ(got.at(node).rows, s.rows) << node;
    EXPECT_EQ(got.at(node).record_after, s.record_after) << node;
  }
}

}  // namespace
}  // namespace faultline::sim
