// Layer-3 detector: turns kernel-log observations (source kmsg) into findings, with
// the rules that need more than one line (SIGNALS.md "Real-world traps"):
//  - XID 13/31 from one program = user_application; the same XID on the same GPU (same
//    GPC/TPC for 13) from different programs, or repeated after restarts, = suspect
//    hardware, unless that program faults the same way on other GPUs too.
//  - XID 48 alone = reset_gpu; 48 with 63/64 on the same GPU = drain, then reset.
//  - XID 45 within a few seconds after another XID on the same GPU is sympathetic (it
//    joins that finding as evidence); 45 alone is its own finding.
//  - XID 94 (contained) never escalates to RMA, however often it repeats.
//  - XID 79 / "fallen off the bus" after AER errors on the GPU's link names the link and
//    its upstream port; without AER it names the GPU.
//  - Corrected AER bursts are findings on the device that reported them; a NIC's burst
//    never implicates a GPU.
//  - XID 154 raises the action of the GPU's most severe finding to the driver's
//    recovery action.
// GPU identity: PCI bus ids are mapped to index/UUID/serial through the inventory given
// at construction plus the "GPU at PCI:" / serial lines in the log itself; an unmapped
// bus id stays a bus id.
#pragma once

#include <vector>

#include "core/inventory.h"
#include "engine/detect/detector.h"

namespace faultline {

struct KernelDetectorOptions {
  int64_t sympathetic_window_ns = 10LL * 1'000'000'000;  // 45 this soon after another XID is sympathetic
  int64_t pair_window_ns = 600LL * 1'000'000'000;        // 48 with 63/64; AER before 79
  int64_t aer_storm_window_ns = 60LL * 1'000'000'000;    // corrected AER rate window
  uint64_t aer_storm_count = 25;                         // corrected AER errors per window = storm
  uint64_t edac_ce_count = 10;                           // host corrected memory errors worth a finding
  int link_flap_count = 3;                               // NIC link down/up cycles = flapping
  size_t max_evidence = 20;                              // evidence lines kept per finding
};

class KernelDetector final : public Detector {
 public:
  explicit KernelDetector(KernelDetectorOptions options = {}, Inventory inventory = {});

  std::string_view name() const override { return "kernel"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;

 private:
  KernelDetectorOptions options_;
  Inventory inventory_;
  std::vector<Observation> observations_;
};

}  // namespace faultline
