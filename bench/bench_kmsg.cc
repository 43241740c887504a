// Kernel-log classification throughput: faultline's reader (Hyperscan prefilter +
// classifier + assembler + dedup) against a naive baseline (std::regex per line over the
// same patterns), on the same generated log: realistic benign lines with ~1% GPU/PCIe
// lines. Run: build/bench/bench_kmsg  (or `make bench`).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "sources/kmsg/log_reader.h"

namespace faultline {
namespace {

const char* kBenign[] = {
    "systemd[1]: Started Session %d of User root.",
    "audit: type=1400 audit(1700000000.%d:120): apparmor=\"STATUS\" operation=\"profile_load\" name=\"snap\"",
    "IPv6: ADDRCONF(NETDEV_CHANGE): eno%d: link becomes ready",
    "usb 1-%d: new high-speed USB device number 3 using xhci_hcd",
    "EXT4-fs (nvme0n1p%d): mounted filesystem with ordered data mode. Quota mode: none.",
    "device veth%da1b2c3 entered promiscuous mode",
    "cni0: port %d(veth4f2a91c0) entered forwarding state",
    "nvme nvme%d: 64/0/0 default/read/poll queues",
    "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to %d",
    "TCP: request_sock_TCP: Possible SYN flooding on port %d. Sending cookies.",
};
const char* kGpu[] = {
    "NVRM: Xid (PCI:0000:%02x:00): 13, pid=%d, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): "
    "Out Of Range Address",
    "NVRM: Xid (PCI:0000:%02x:00): 31, pid=%d, name=pt_main_thread, Ch 00000008, intr 00000000. MMU Fault: ENGINE "
    "GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_a0000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    "nvidia 0000:%02x:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID) %d",
    "NVRM: Xid (PCI:0000:%02x:00): 94, pid=%d, name=train, Contained: SM (0x1). RST: No, D-RST: No",
};

std::string MakeLog(size_t bytes) {
  std::mt19937 rng(42);
  std::string log;
  log.reserve(bytes + 256);
  char buf[512];
  double t = 1000.0;
  while (log.size() < bytes) {
    t += 0.000731;
    const bool gpu = rng() % 100 == 0;
    const char* fmt = gpu ? kGpu[rng() % std::size(kGpu)] : kBenign[rng() % std::size(kBenign)];
    int n = std::snprintf(buf, sizeof buf, "[%12.6f] ", t);
    if (gpu) {
      n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, 0x17 + static_cast<int>(rng() % 8) * 0x20,
                         static_cast<int>(rng() % 100000));
    } else {
      n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, static_cast<int>(rng() % 1000));
    }
    log.append(buf, static_cast<size_t>(n));
    log.push_back('\n');
  }
  return log;
}

const std::string& Log() {
  static const std::string log = MakeLog(64 << 20);
  return log;
}

size_t CountLines(std::string_view s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

void BM_FaultlineReader(benchmark::State& state) {
  const std::string& log = Log();
  size_t found = 0;
  for (auto _ : state) {
    state.PauseTiming();  // reader set-up (Hyperscan database compile) is per process, not per byte
    auto reader = KernelLogReader::Create({});
    state.ResumeTiming();
    (*reader)->Feed(log);
    (*reader)->Finish();
    found = (*reader)->stats().classified_lines;
    benchmark::DoNotOptimize(found);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * CountLines(log)));
  state.counters["classified_lines"] = static_cast<double>(found);
}
BENCHMARK(BM_FaultlineReader)->Unit(benchmark::kMillisecond);

// The naive approach: one std::regex per event form, tried on every line.
void BM_NaiveStdRegex(benchmark::State& state) {
  const std::vector<std::regex> patterns = {
      std::regex(R"(NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+), (?:pid=([^,]+), )?(?:name=([^,]+), )?(.*))"),
      std::regex(R"(SXid \(PCI:([0-9a-fA-F:.]+)\): (\d+), (.*))"),
      std::regex(R"(NVRM: GPU ([0-9a-fA-F:.]+): GPU has fallen off the bus)"),
      std::regex(R"((\S+) ([0-9a-fA-F:.]+): AER: (?:Multiple )?(.*) error received: (\S+))"),
      std::regex(R"((\S+) ([0-9a-fA-F:.]+): (?:AER: )?PCIe Bus Error: severity=([^,]+), type=([^,]+))"),
      std::regex(R"(\[ ?(\d{1,2})\] (\w+))"),
      std::regex(R"(mce: \[Hardware Error\]: (.*))"),
      std::regex(R"(EDAC (\S+): (\d+) (CE|UE) (.*))"),
      std::regex(R"(mlx5_core ([0-9a-fA-F:.]+).*(insufficient power|Port module event|Link down|Link up))"),
      std::regex(R"(soft lockup - CPU#(\d+) stuck for (\d+)s! \[(.*):(\d+)\])"),
      std::regex(R"(INFO: task (.*):(\d+) blocked for more than (\d+) seconds)"),
      std::regex(R"((\S+)\[(\d+)\]: segfault at (\S+) .* in ([^\[]+))"),
      std::regex(R"(traps: (\S+)\[(\d+)\] (.*))"),
      std::regex(R"(Out of memory: Killed process (\d+) \((.*)\))"),
  };
  // std::regex is slow enough that a 4 MB slice of the same log gives a stable figure.
  const std::string_view log = std::string_view(Log()).substr(0, 4 << 20);
  size_t found = 0;
  for (auto _ : state) {
    found = 0;
    size_t start = 0;
    while (start < log.size()) {
      size_t end = log.find('\n', start);
      if (end == std::string_view::npos) end = log.size();
      const std::string line(log.substr(start, end - start));
      for (const std::regex& re : patterns) {
        if (std::regex_search(line, re)) {
          ++found;
          break;
        }
      }
      start = end + 1;
    }
    benchmark::DoNotOptimize(found);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * CountLines(log)));
  state.counters["classified_lines"] = static_cast<double>(found);
}
BENCHMARK(BM_NaiveStdRegex)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline

BENCHMARK_MAIN();
