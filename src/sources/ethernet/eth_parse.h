// Parsers and counter tables of the RoCE / Ethernet source (docs/ethernet.md). Pure
// functions of the text: no I/O. Every parser rejects what it does not understand with
// kCorrupt (or kUnsupported for a value the kernel uses to say "not known") and a reason;
// none throws or crashes on any input (fuzzed by fuzz/ethernet_parse_fuzzer.cc).
//
// Counter names are data: each driver's name (mlx5, bnxt_re) maps to one canonical name
// and one group, so the detectors reason about "loss" or "congestion", never about a
// vendor's spelling (SIGNALS-ethernet-amd A2, A4, A9).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline {

// What a counter says about the port (SIGNALS-ethernet-amd A5).
enum class EthCounterGroup {
  kCongestion,  // ECN marks, CNPs, PFC pauses: the fabric is busy, nothing is broken
  kLoss,        // retransmissions, sequence errors, ACK timeouts: packets were lost
  kLink,        // CRC/symbol errors, link-down events, carrier changes: the physical link
  kHostDrain,   // our host/NIC cannot absorb traffic (out of buffer, pause storms we send)
  kInfo,        // bookkeeping, kept for evidence only
};
std::string_view ToString(EthCounterGroup g);

struct EthCounterInfo {
  std::string canonical;  // "out_of_sequence", "np_cnp_sent", "rx_prio_pause", ...
  EthCounterGroup group = EthCounterGroup::kInfo;
  int priority = -1;  // PFC priority 0..7 for the per-priority counters, else -1
};

// RDMA port hw_counters/<file> (mlx5 and bnxt_re names); nullopt for files not read.
std::optional<EthCounterInfo> LookupRoceCounter(std::string_view file);
// The counters of an Ethernet interface worth keeping: /sys/class/net/<if>/statistics/*,
// carrier_* and the driver's ethtool statistics (rx_prio<p>_pause, rx_crc_errors_phy, ...);
// nullopt for everything else (queue counters, byte counts).
std::optional<EthCounterInfo> LookupEthCounter(std::string_view name);

// Every RDMA hw_counters file name the source reads (the allowlist: nothing else is read).
const std::vector<std::string>& RoceCounterFiles();

// An interface name as the kernel allows it (dev_valid_name): 1..15 bytes, not "." or
// "..", no '/', ':' or whitespace, printable. Names from a directory listing are checked
// before they become part of a path: "../x" never escapes /sys/class/net.
bool IsSafeInterfaceName(std::string_view name);
// An RDMA device name (mlx5_0, rocep8s0f0, bnxt_re0): same rules, up to 63 bytes.
bool IsSafeRdmaName(std::string_view name);

// /sys/class/net/<if>/operstate: RFC 2863 words (up, down, lowerlayerdown, dormant,
// testing, notpresent, unknown).
Result<std::string> ParseOperstate(std::string_view text);
// /sys/class/net/<if>/speed in Mb/s. "-1" (or 4294967295: SPEED_UNKNOWN printed unsigned)
// is kUnsupported: the link is down or the driver does not know. 0..10,000,000 else kCorrupt.
Result<int64_t> ParseSpeedMbps(std::string_view text);
// /sys/class/net/<if>/carrier: "0" / "1".
Result<bool> ParseCarrier(std::string_view text);

// One ethtool statistic: the driver's ETH_SS_STATS string and its u64 value.
struct EthtoolStat {
  std::string name;
  uint64_t value = 0;
};
inline constexpr size_t kMaxEthtoolStats = 8192;    // mlx5 with many channels has ~3000
inline constexpr size_t kMaxEthtoolNameBytes = 32;  // ETH_GSTRING_LEN
inline constexpr size_t kMaxEthtoolTextBytes = 512 * 1024;
// A statistics file of the test double / a saved snapshot: "name: value" per line, an
// optional "NIC statistics:" header, blank lines ignored. Names are 1..32 printable bytes;
// values unsigned decimal after the last ':' (bnxt_en names hold one). Too many lines, an
// oversized file, a bad name or value: kCorrupt naming the line.
Result<std::vector<EthtoolStat>> ParseEthtoolStatsText(std::string_view text);
// True for a name the ioctl may return (1..ETH_GSTRING_LEN printable bytes): the real
// reader drops anything else rather than putting it into an observation.
bool IsPlausibleStatName(std::string_view name);

}  // namespace faultline
