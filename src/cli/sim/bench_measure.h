// What the agent benches (`bench agent-rest`, `bench agent-days`) measure of this
// process and of the agent's store, and the healthy node they run against.
#pragma once

#include <cstdint>
#include <string>

namespace faultline::cli {

// A healthy HGX node with its ordinary background (a training job reporting its steps),
// for as long as a bench runs: a week, the longest a scenario may state.
extern const char kBenchHealthyNode[];

// This process's memory from /proc/self/smaps_rollup, in MiB. PSS divides each shared
// library page among the processes mapping it, so it rises when other processes using
// libc, libstdc++ or libcrypto exit (a build finishing, the machine going quiet) with no
// change in the agent. The anonymous memory and the private pages (USS) are its own.
struct Memory {
  double rss_mib = 0, pss_mib = 0, anon_mib = 0, uss_mib = 0;
};
Memory ReadMemory();

// The allocator's blocks in use (all arenas) and SQLite's share of them, in MiB.
struct Heap {
  double in_use_mib = 0, sqlite_mib = 0, free_held_mib = 0, mapped_mib = 0;
};
Heap ReadHeap();
// "in use 8.3 MiB (sqlite 2.1), free but held 3.1 MiB, arenas 12 MiB mapped"
std::string HeapBreakdown();

// Where a bench makes its run's directory: --workdir when given, else $TMPDIR, else /tmp.
// A disk, not the simulator's /dev/shm: agent-rest times fsynced commits.
std::string BenchParentDir(const std::string& workdir);

// Rows and bytes of a store, read-only (like why-slow: the agent keeps writing).
// used_bytes: the pages in use; file_bytes: the file and its WAL. Zeros when it cannot
// be opened.
struct StoreSnapshot {
  int64_t observations = 0, findings = 0, diagnoses = 0, used_bytes = 0, file_bytes = 0;
  int64_t Rows() const { return observations + findings + diagnoses; }
};
StoreSnapshot SnapshotStore(const std::string& path);

}  // namespace faultline::cli
