// Parsers for the sysfs attribute files the fabric source reads. Pure functions of the
// text: no I/O, no allocation beyond the result. Every parser rejects input it does not
// understand with kCorrupt and a reason; none of them throws or crashes on any input
// (fuzzed by fuzz/sysfs_counter_fuzzer.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline {

// One line of an AER counter file ("RxErr 3").
struct AerCounter {
  std::string name;
  uint64_t value = 0;
};

// Limits: sysfs attributes are at most one page; anything bigger is not a sysfs file.
inline constexpr size_t kMaxAttrBytes = 4096;
inline constexpr size_t kMaxAerLines = 128;

// aer_dev_correctable / aer_dev_nonfatal / aer_dev_fatal: "<Name> <count>" per line.
Result<std::vector<AerCounter>> ParseAerCounters(std::string_view text);
// A file holding one unsigned decimal counter (IB counters/*, aer_rootport_total_err_*).
// The kernel's "N/A (no PMA)" (the HCA did not answer the performance-management query)
// is kUnsupported, not kCorrupt.
Result<uint64_t> ParseCounter(std::string_view text);

// Width in bits of an InfiniBand PortCounters field as the kernel exposes it under
// ports/<n>/counters/ (drivers/infiniband/core/sysfs.c): symbol_error 16,
// link_error_recovery 8, link_downed 8, port_rcv_errors 16, local_link_integrity_errors 4,
// excessive_buffer_overrun_errors 4, ...; 0 for a name it does not know.
int IbCounterWidthBits(std::string_view counter);
// True when `value` is the largest value the counter can hold: 2^width-1 for its known
// width, or 2^32-1 / 2^64-1 whatever the name. PMA error counters stop there (they do not
// wrap), so every later increment is invisible and a rate from it is unknown, not zero.
bool IbCounterSaturated(std::string_view counter, uint64_t value);
// The saturation value for `counter` (2^width-1), 0 when the width is unknown.
uint64_t IbCounterMax(std::string_view counter);
// current_link_speed / max_link_speed: "32.0 GT/s PCIe", "16.0 GT/s", "2.5 GT/s PCIe".
// "Unknown" (link down, or a device without a link) is kUnsupported.
Result<double> ParseLinkSpeed(std::string_view text);
// current_link_width / max_link_width: "16"; 0 means the link is down. 0..32.
Result<int> ParseLinkWidth(std::string_view text);
// The PCIe generation of a transfer rate in GT/s (2.5 -> 1 ... 64 -> 6); 0 if unknown.
int PcieGenFromSpeed(double gts);

// InfiniBand port state / phys_state: "4: ACTIVE", "5: LinkUp".
struct IbState {
  int number = 0;
  std::string name;
};
Result<IbState> ParseIbState(std::string_view text);
// InfiniBand port rate: "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)" -> Gb/s.
Result<double> ParseIbRate(std::string_view text);
// PCI class / vendor / device attributes: "0x030200".
Result<uint32_t> ParsePciId(std::string_view text);

}  // namespace faultline
