// The snapshot of a 10,000-node analyzer (issue 25): it round-trips, and writing it
// costs the process little beyond the bytes being written (no whole-state JSON DOM).
#include <gtest/gtest.h>
#include <malloc.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/sanitizer.h"
#include "fleet/analyzer.h"
#include "fleet_test_util.h"

namespace faultline::fleet {
namespace {

using testing::JobStream;
using testing::MakeTopology;
using testing::StepTime;

// 10,000 nodes; 1,000 under ASan, where the same code runs 50 times slower and resident
// memory is the sanitizer's (the two memory tests skip there).
constexpr int kRacks = static_cast<int>(SweepSize(100, 10));
constexpr int kPerRack = 100;
constexpr int kSteps = 32;  // fills each node's sample history (max_samples_per_series)

// A field of /proc/self/status in MiB (-1 where it cannot be read: not Linux).
double ProcMiB(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream v(line.substr(field.size() + 1));
    double kb = -1;
    v >> kb;
    return kb / 1024.0;
  }
  return -1;
}

// Resets VmHWM to the current RSS, so a later VmHWM is the peak of what ran since.
// Freed heap is given back first: memory the allocator kept from earlier work would be
// reused without raising the resident size, and hide the peak.
bool ResetPeak() {
  ::malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

class SnapshotScaleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    topo_ = new FleetTopology(MakeTopology(kRacks, kPerRack));
    analyzer_ = new FleetAnalyzer(*topo_);
    JobStream s;
    s.topology = topo_;
    // One step at a time: the envelopes of all steps at once would dwarf the analyzer.
    for (int step = 0; step < kSteps; ++step) {
      for (const FleetNode& n : topo_->nodes) analyzer_->Ingest(s.Batch(n, step));
    }
  }
  static void TearDownTestSuite() {
    delete analyzer_;
    delete topo_;
  }
  static FleetTopology* topo_;
  static FleetAnalyzer* analyzer_;
};

FleetTopology* SnapshotScaleTest::topo_ = nullptr;
FleetAnalyzer* SnapshotScaleTest::analyzer_ = nullptr;

// First: a test run before it leaves freed memory that would hide the peak.
TEST_F(SnapshotScaleTest, WritingTheSnapshotInChunksPeaksNearOneChunk) {
  if (kBuiltWithAsan) GTEST_SKIP() << "resident memory under a sanitizer says nothing about the writer";
  if (!ResetPeak()) GTEST_SKIP() << "no /proc/self/clear_refs: cannot measure the peak";
  const double rss = ProcMiB("VmRSS");
  // As the consumer loop writes it: into one 512 KiB chunk, sent on (here: dropped) when full.
  constexpr size_t kChunk = 512 << 10;
  std::string chunk;
  chunk.reserve(kChunk);
  size_t bytes = 0;
  analyzer_->WriteSnapshot([&](std::string_view piece) {
    bytes += piece.size();
    chunk.append(piece);
    if (chunk.size() >= kChunk) chunk.clear();
  });
  const double peak = ProcMiB("VmHWM") - rss;
  const double mib = static_cast<double>(bytes) / (1 << 20);
  std::cout << "snapshot of " << analyzer_->nodes() << " nodes: " << mib << " MiB, written in chunks with a peak of "
            << peak << " MiB above the analyzer\n";
  // The whole state as one JSON document took about 6 times the snapshot's size (138 MiB
  // here); any way that holds the whole text takes at least its size. What is left: the
  // message id window as JSON values (2^18 ids by default, 16 bytes each, more while the
  // array grows), one chunk and one node: 9 to 12 MiB, none of it growing with the nodes.
  EXPECT_LT(peak, mib);
}

// Restoring takes each node out of the text as it is parsed: the peak is the new state
// and a node, never the whole document as values.
TEST_F(SnapshotScaleTest, RestoringPeaksNearTheStateItBuilds) {
  if (kBuiltWithAsan) GTEST_SKIP() << "resident memory under a sanitizer says nothing about the parser";
  const std::string snap = analyzer_->Snapshot();
  const double mib = static_cast<double>(snap.size()) / (1 << 20);
  auto restored = std::make_unique<FleetAnalyzer>(*topo_);
  if (!ResetPeak()) GTEST_SKIP() << "no /proc/self/clear_refs: cannot measure the peak";
  const double rss = ProcMiB("VmRSS");
  ASSERT_TRUE(restored->Restore(snap).ok());
  const double peak = ProcMiB("VmHWM") - rss;
  ::malloc_trim(0);
  const double kept = ProcMiB("VmRSS") - rss;
  std::cout << "restoring a " << mib << " MiB snapshot of " << restored->nodes() << " nodes: peak " << peak
            << " MiB, of which " << kept << " MiB is the restored state\n";
  // What the restore held beyond the state it built: parsed as one document, 106 MiB here
  // (every node's values at once); node by node, 17 MiB (the message id window as values,
  // one node, the allocator's slack).
  EXPECT_LT(peak - kept, mib);
}

TEST_F(SnapshotScaleTest, TenThousandNodesRoundTrip) {
  ASSERT_EQ(analyzer_->nodes(), size_t{kRacks * kPerRack});
  const std::string snap = analyzer_->Snapshot();
  // The pieces make the text the whole document dumps to: the format restore reads.
  EXPECT_EQ(Json::parse(snap).dump(-1, ' ', false, Json::error_handler_t::replace), snap);
  FleetAnalyzer restored(*topo_);
  ASSERT_TRUE(restored.Restore(snap).ok());
  EXPECT_EQ(restored.nodes(), analyzer_->nodes());
  EXPECT_EQ(restored.stats(), analyzer_->stats());
  EXPECT_EQ(restored.Snapshot(), snap);
}

}  // namespace
}  // namespace faultline::fleet
