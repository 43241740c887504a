// A fake amdgpu sysfs tree (docs/amd.md "Fake amdgpu sysfs"): for each card,
// <root>/sys/class/drm/card<N>/device -> the GPU's PCI device directory, holding the
// files the amdgpu reader reads: vendor, uevent, ras/features, ras/<block>_err_count,
// ras/gpu_vram_bad_pages, pcie_replay_count, mem_info_vram_total, hwmon/hwmon<N>/temp*
// and power1_*, plus /sys/module/amdgpu/parameters/bad_page_threshold.
//
// When <root>/sys/bus/pci/devices/<bdf> exists (a FakeSysfsTree made the PCIe topology)
// the card links to it, so the card and the PCIe tree are one device; otherwise the
// device directory is made under <root>/sys/devices/amdgpu-fake/. Files are written
// atomically (temp file + rename): a reader never sees half a file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/status.h"

namespace faultline::fake_amdsmi {

struct FakeAmdgpuCard {
  std::string bdf;  // "0000:0c:00.0"
  struct Count {
    uint64_t ue = 0, ce = 0;
  };
  std::map<std::string, Count> ras;  // block -> counts; empty = no ras/ directory
  uint64_t bad_reserved = 0, bad_pending = 0, bad_unreservable = 0;
  uint64_t pcie_replay = 0;
  uint64_t vram_bytes = 192ULL << 30;
  // hwmon, millidegrees / microwatts as the kernel prints them.
  int64_t temp_edge_mc = 45000, temp_junction_mc = 55000, temp_mem_mc = 50000;
  int64_t temp_junction_crit_mc = 105000, temp_mem_crit_mc = 95000;
  int64_t power_uw = 300000000, power_cap_uw = 750000000;
};

// Writes (or rewrites) card `index` under `root`.
Status WriteFakeAmdgpuCard(const std::string& root, int index, const FakeAmdgpuCard& card);

// Writes the module parameter (-1 auto, 0 off, N pages).
Status WriteFakeAmdgpuThreshold(const std::string& root, int64_t bad_page_threshold);

// The gpu_vram_bad_pages text for the given counts (R lines, then P, then F).
std::string FakeBadPagesText(uint64_t reserved, uint64_t pending, uint64_t unreservable);

}  // namespace faultline::fake_amdsmi
