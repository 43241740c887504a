#include "sources/ethernet/eth_parse.h"

#include <array>
#include <string>

#include "parse/text.h"

namespace faultline {
namespace {

using G = EthCounterGroup;

struct NameMap {
  const char* name;       // the driver's name
  const char* canonical;  // what the detectors see
  G group;
};

// RDMA hw_counters (SIGNALS-ethernet-amd A2 mlx5, A9 bnxt_re). Only these files are ever
// opened: reading a hw_counters file can cost a firmware command.
constexpr NameMap kRoce[] = {
    // mlx5
    {"np_ecn_marked_roce_packets", "np_ecn_marked_roce_packets", G::kCongestion},
    {"np_cnp_sent", "np_cnp_sent", G::kCongestion},
    {"rp_cnp_handled", "rp_cnp_handled", G::kCongestion},
    {"rp_cnp_ignored", "rp_cnp_ignored", G::kCongestion},
    {"roce_slow_restart_cnps", "roce_slow_restart_cnps", G::kCongestion},
    {"out_of_sequence", "out_of_sequence", G::kLoss},
    {"packet_seq_err", "packet_seq_err", G::kLoss},
    {"implied_nak_seq_err", "implied_nak_seq_err", G::kLoss},
    {"local_ack_timeout_err", "local_ack_timeout_err", G::kLoss},
    {"duplicate_request", "duplicate_request", G::kLoss},
    {"roce_adp_retrans", "roce_adp_retrans", G::kLoss},
    {"roce_adp_retrans_to", "roce_adp_retrans_to", G::kLoss},
    {"roce_slow_restart", "roce_slow_restart", G::kLoss},
    {"roce_slow_restart_trans", "roce_slow_restart_trans", G::kLoss},
    {"req_transport_retries_exceeded", "req_transport_retries_exceeded", G::kLoss},
    {"rx_icrc_encapsulated", "rx_icrc_encapsulated", G::kLink},
    {"out_of_buffer", "out_of_buffer", G::kHostDrain},
    // bnxt_re (Broadcom Thor): the closest mlx5 meaning (A9 "rough equivalence").
    {"to_retransmits", "local_ack_timeout_err", G::kLoss},
    {"seq_err_naks_rcvd", "packet_seq_err", G::kLoss},
    {"oos_drop_count", "out_of_sequence", G::kLoss},
    {"dup_req", "duplicate_request", G::kLoss},
    {"max_retry_exceeded", "req_transport_retries_exceeded", G::kLoss},
    {"tx_cnp_pkts", "np_cnp_sent", G::kCongestion},
    {"rx_cnp_pkts", "rp_cnp_handled", G::kCongestion},
    {"rx_ecn_marked_pkts", "np_ecn_marked_roce_packets", G::kCongestion},
    {"rx_out_of_buffer", "out_of_buffer", G::kHostDrain},
};

// Interface counters with one fixed name (sysfs and ethtool; mlx5 and bnxt_en spellings).
constexpr NameMap kEth[] = {
    {"carrier_changes", "carrier_changes", G::kLink},
    {"carrier_down_count", "carrier_down_count", G::kLink},
    {"rx_crc_errors", "rx_crc_errors", G::kLink},  // statistics/
    {"rx_frame_errors", "rx_frame_errors", G::kLink},
    {"rx_missed_errors", "rx_missed_errors", G::kHostDrain},
    {"rx_crc_errors_phy", "rx_crc_errors_phy", G::kLink},  // mlx5 ethtool
    {"rx_symbol_err_phy", "rx_symbol_err_phy", G::kLink},
    {"rx_pcs_symbol_err_phy", "rx_pcs_symbol_err_phy", G::kLink},
    {"link_down_events_phy", "link_down_events_phy", G::kLink},
    {"rx_discards_phy", "rx_discards_phy", G::kHostDrain},
    {"tx_discards_phy", "tx_discards_phy", G::kHostDrain},
    {"rx_out_of_buffer", "rx_out_of_buffer", G::kHostDrain},
    {"tx_pause_storm_warning_events", "tx_pause_storm_warning_events", G::kHostDrain},
    {"tx_pause_storm_error_events", "tx_pause_storm_error_events", G::kHostDrain},
    {"rx_pause_ctrl_phy", "rx_pause_ctrl_phy", G::kCongestion},  // 802.3x global pause
    {"tx_pause_ctrl_phy", "tx_pause_ctrl_phy", G::kHostDrain},
    {"rx_fcs_err_frames", "rx_crc_errors_phy", G::kLink},  // bnxt_en
    {"link_down_events", "link_down_events_phy", G::kLink},
};

// Per-priority PFC counters: "<prefix><p><suffix>" with p in 0..7.
struct PrioPattern {
  const char* prefix;
  const char* suffix;
  const char* canonical;
  G group;
};
constexpr PrioPattern kPrio[] = {
    {"rx_prio", "_pause", "rx_prio_pause", G::kCongestion},  // mlx5: pauses received (the fabric pushes back)
    {"rx_prio", "_pause_duration", "rx_prio_pause_duration", G::kCongestion},  // microseconds paused
    {"tx_prio", "_pause", "tx_prio_pause", G::kHostDrain},  // we pause the switch: our side cannot absorb
    {"tx_prio", "_pause_duration", "tx_prio_pause_duration", G::kHostDrain},
    {"rx_prio", "_marked", "rx_prio_marked", G::kCongestion},
    {"rx_pfc_ena_frames_pri", "", "rx_prio_pause", G::kCongestion},  // bnxt_en
    {"tx_pfc_ena_frames_pri", "", "tx_prio_pause", G::kHostDrain},
};

bool Printable(char c) { return c > 0x20 && c < 0x7f; }

bool SafeName(std::string_view name, size_t max) {
  if (name.empty() || name.size() > max || name == "." || name == "..") return false;
  for (char c : name) {
    if (!Printable(c) || c == '/' || c == ':') return false;
  }
  return true;
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

Status Corrupt(std::string_view what, std::string_view text) {
  std::string shown;  // a bounded, printable prefix: the text may be hostile
  for (char c : text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return Status(StatusCode::kCorrupt, std::string(what) + ": \"" + shown + (text.size() > 40 ? "...\"" : "\""));
}

std::string_view OneLine(std::string_view text) {
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos && nl + 1 < text.size() && !Trim(text.substr(nl + 1)).empty()) return {};
  return Trim(text.substr(0, nl));
}

}  // namespace

std::string_view ToString(EthCounterGroup g) {
  switch (g) {
    case G::kCongestion:
      return "congestion";
    case G::kLoss:
      return "loss";
    case G::kLink:
      return "link";
    case G::kHostDrain:
      return "host_drain";
    case G::kInfo:
      return "info";
  }
  return "info";
}

std::optional<EthCounterInfo> LookupRoceCounter(std::string_view file) {
  for (const NameMap& m : kRoce) {
    if (file == m.name) return EthCounterInfo{m.canonical, m.group, -1};
  }
  return std::nullopt;
}

std::optional<EthCounterInfo> LookupEthCounter(std::string_view name) {
  for (const NameMap& m : kEth) {
    if (name == m.name) return EthCounterInfo{m.canonical, m.group, -1};
  }
  for (const PrioPattern& p : kPrio) {
    const std::string_view prefix = p.prefix, suffix = p.suffix;
    if (name.size() != prefix.size() + 1 + suffix.size()) continue;
    if (name.substr(0, prefix.size()) != prefix || name.substr(prefix.size() + 1) != suffix) continue;
    const char d = name[prefix.size()];
    if (d < '0' || d > '7') continue;
    return EthCounterInfo{p.canonical, p.group, d - '0'};
  }
  return std::nullopt;
}

const std::vector<std::string>& RoceCounterFiles() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out;
    for (const NameMap& m : kRoce) out.emplace_back(m.name);
    return out;
  }();
  return files;
}

bool IsSafeInterfaceName(std::string_view name) { return SafeName(name, 15); }
bool IsSafeRdmaName(std::string_view name) { return SafeName(name, 63); }
bool IsPlausibleStatName(std::string_view name) {
  if (name.empty() || name.size() > kMaxEthtoolNameBytes) return false;
  for (char c : name) {
    if (c < 0x20 || c >= 0x7f) return false;  // ':' allowed: bnxt_en names "[0]: rx_ucast_packets"
  }
  return true;
}

Result<std::string> ParseOperstate(std::string_view text) {
  if (text.size() > 64) return Corrupt("operstate: too long", text);
  const std::string_view v = OneLine(text);
  for (const char* s : {"up", "down", "lowerlayerdown", "dormant", "testing", "notpresent", "unknown"}) {
    if (v == s) return std::string(v);
  }
  return Corrupt("operstate: not an RFC 2863 state", text);
}

Result<int64_t> ParseSpeedMbps(std::string_view text) {
  if (text.size() > 64) return Corrupt("speed: too long", text);
  const std::string_view v = OneLine(text);
  if (v == "-1" || v == "4294967295") return Status(StatusCode::kUnsupported, "speed: unknown (link down?)");
  auto n = ParseU64(v);
  if (!n) return Corrupt("speed: not a number of Mb/s", text);
  if (*n > 10'000'000) return Corrupt("speed: implausible", text);
  return static_cast<int64_t>(*n);
}

Result<bool> ParseCarrier(std::string_view text) {
  if (text.size() > 64) return Corrupt("carrier: too long", text);
  const std::string_view v = OneLine(text);
  if (v == "0") return false;
  if (v == "1") return true;
  return Corrupt("carrier: expected 0 or 1", text);
}

Result<std::vector<EthtoolStat>> ParseEthtoolStatsText(std::string_view text) {
  if (text.size() > kMaxEthtoolTextBytes) return Status(StatusCode::kCorrupt, "ethtool stats: file too large");
  std::vector<EthtoolStat> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || (line_no == 1 && line == "NIC statistics:")) continue;
    const size_t colon = line.rfind(':');
    if (colon == std::string_view::npos) return Corrupt("ethtool stats: line without ':'", line);
    const std::string_view name = Trim(line.substr(0, colon));
    if (!IsPlausibleStatName(name)) return Corrupt("ethtool stats: bad name", line);
    auto value = ParseU64(Trim(line.substr(colon + 1)));
    if (!value) return Corrupt("ethtool stats: bad value", line);
    if (out.size() >= kMaxEthtoolStats) return Status(StatusCode::kCorrupt, "ethtool stats: too many lines");
    out.push_back({std::string(name), *value});
  }
  if (out.empty()) return Status(StatusCode::kCorrupt, "ethtool stats: no statistics");
  return out;
}

}  // namespace faultline
