#include "cli/sim/bench_measure.h"

#include <malloc.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "store/store.h"

namespace faultline::cli {

const char kBenchHealthyNode[] =
    "name: bench-agent-rest\n"
    "description: a healthy 8-GPU node at rest (faultline bench agent-rest, agent-days)\n"
    "duration_s: 604800\n"
    "truth:\n  fault_class: none\n  action: none\n  start_s: 0\n  slow: false\n"
    "faults: []\n";

Memory ReadMemory() {
  Memory m;
  // "Rss:   12345 kB" lines after the rollup's address-range header line.
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kb = 0;
    if (!(fields >> key >> kb)) continue;
    if (key == "Rss:") m.rss_mib = kb / 1024;
    if (key == "Pss:") m.pss_mib = kb / 1024;
    if (key == "Anonymous:") m.anon_mib = kb / 1024;
    if (key == "Private_Clean:" || key == "Private_Dirty:") m.uss_mib += kb / 1024;
  }
  return m;
}

Heap ReadHeap() {
  const struct mallinfo2 mi = ::mallinfo2();
  constexpr double kMiB = 1048576.0;
  return Heap{.in_use_mib = static_cast<double>(mi.uordblks + mi.hblkhd) / kMiB,
              .sqlite_mib = static_cast<double>(sqlite3_memory_used()) / kMiB,
              .free_held_mib = static_cast<double>(mi.fordblks) / kMiB,
              .mapped_mib = static_cast<double>(mi.arena + mi.hblkhd) / kMiB};
}

std::string HeapBreakdown() {
  const Heap h = ReadHeap();
  char out[160];
  std::snprintf(out, sizeof out, "in use %.1f MiB (sqlite %.1f), free but held %.1f MiB, arenas %.0f MiB mapped",
                h.in_use_mib, h.sqlite_mib, h.free_held_mib, h.mapped_mib);
  return out;
}

std::string BenchParentDir(const std::string& workdir) {
  if (!workdir.empty()) return workdir;
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

namespace {
int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}
}  // namespace

StoreSnapshot SnapshotStore(const std::string& path) {
  StoreSnapshot s;
  StoreOptions o;
  o.read_only = true;
  auto store = Store::Open(path, o);
  if (!store.ok()) return s;
  if (auto st = (*store)->Stats(); st.ok()) {
    s.observations = st->observations;
    s.findings = st->findings;
    s.diagnoses = st->diagnoses;
    s.used_bytes = st->used_bytes;
  }
  s.file_bytes = FileBytes(path) + FileBytes(path + "-wal");
  return s;
}

}  // namespace faultline::cli
