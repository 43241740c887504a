// Layer-3 detector: turns kernel-log observations (source kmsg) into findings, with
// the rules that need more than one line (SIGNALS.md "Real-world traps"):
//  - XID 13/31 from one program = user_application; the same XID on the same GPU (same
//    GPC/TPC for 13) from different programs, or repeated after restarts, = suspect
//    hardware, unless that program faults the same way on other GPUs too. The lines one
//    exception prints (the GPC/TPC line, then the ESR line, same pid, within a couple of
//    seconds) are one event and join one finding.
//  - XID 48 alone = reset_gpu; 48 with 63/64 on the same GPU = drain, then reset.
//  - XID 45 within a few seconds after another XID on the same GPU is sympathetic (it
//    joins that finding as evidence); 45 alone is its own finding.
//  - XID 94 (contained) never escalates to RMA, however often it repeats.
//  - XID 79 / "fallen off the bus" after AER errors on the GPU's link names the link and
//    its upstream port; without AER it names the GPU. A fatal AER on the GPU's upstream
//    port (Uncorrected (Fatal), "device recovery failed", DPC containment) is its own
//    pcie_link_degraded finding on that port, and the GPU that falls off right after it
//    is marked as attached to the port (the isolator explains the GPU by the link).
//  - NVLink5 XIDs 144-150 are decoded against NVIDIA's table; a row that says "evaluate
//    the following XID 154" stays at application level until that XID 154 arrives.
//  - Corrected AER bursts are findings on the device that reported them; a NIC's burst
//    never implicates a GPU.
//  - XID 154 raises the action of the GPU's most severe finding to the driver's
//    recovery action.
//  - SXids are read with NVIDIA's per-code knowledge (xid_catalog.h): safe-to-ignore codes
//    make no finding, a single non-fatal link SXid is watched (a repeat on one port is a
//    reseat), fatal ones name the NVSwitch port.
//  - Host memory errors (EDAC / MCE) are grouped per DIMM location when the line names one.
//  - mlx5 NIC health: firmware command timeouts, a compromised health poller, unrecoverable
//    hardware error syndromes name the NIC (bus id, mlx5_N), never a GPU.
// GPU identity: PCI bus ids are mapped to index/UUID/serial through the inventory given
// at construction, the shared inventory the caller keeps filling (gpu_identity.h; read
// at each Findings() call) and the "GPU at PCI:" / serial lines in the log itself; an
// unmapped bus id stays a bus id.
//
// Incremental: Observe() folds each observation once into bounded per-rule state (groups
// capped per rule, windows kept only as long as the longest rule needs, evidence capped
// per finding); Findings() assembles the current findings from that state, costing the
// number of groups, never the history. Findings() is a pure function of the state: two
// calls with no Observe() between return identical findings. Every finding carries its
// event identity (Finding::key: rule, group, first line's time); no two findings share
// (layer, class, component, key): findings that would are merged.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/inventory.h"
#include "engine/detect/detector.h"

namespace faultline {

struct KernelDetectorOptions {
  int64_t sympathetic_window_ns = 10LL * 1'000'000'000;  // 45 this soon after another XID is sympathetic
  int64_t pair_window_ns = 600LL * 1'000'000'000;        // 48 with 63/64; AER before 79
  int64_t fatal_link_window_ns = 30LL * 1'000'000'000;   // a GPU off the bus this soon after a fatal port error
  int64_t event_window_ns = 2LL * 1'000'000'000;         // lines of one XID 13 exception (same pid)
  int64_t aer_storm_window_ns = 60LL * 1'000'000'000;    // corrected AER rate window
  uint64_t aer_storm_count = 25;                         // corrected AER errors per window = storm
  uint64_t edac_ce_count = 10;                           // host corrected memory errors worth a finding
  int link_flap_count = 3;                               // NIC link down/up cycles = flapping
  uint64_t sxid_link_repeat = 10;                        // non-fatal SXids on one port that call for a reseat
  uint64_t nic_cmd_timeout_count = 3;                    // leaking firmware command timeouts = NIC needs a reset
  size_t max_evidence = 20;                              // evidence lines kept per finding
  size_t max_groups = 512;                               // findings in the making kept per rule
  size_t max_evidence_bytes = 1024;                      // an evidence line is cut to this many bytes
  // An event (a group, an index entry) no line touched for this long, in the log's own
  // time, is forgotten: its finding is no longer reported and a later line of its kind
  // starts a new event. 0 = every event is kept (up to max_groups), as offline reading
  // wants; a long-running agent sets it ([agent] detector_horizon) so its state is
  // bounded by time as well as by count.
  int64_t horizon_ns = 0;
};

class KernelDetector final : public Detector {
 public:
  // `shared` (may be null; not owned, must outlive the detector) is read, never written.
  explicit KernelDetector(KernelDetectorOptions options = {}, Inventory inventory = {},
                          const Inventory* shared = nullptr);
  ~KernelDetector() override;
  KernelDetector(KernelDetector&&) noexcept;
  KernelDetector& operator=(KernelDetector&&) noexcept;

  std::string_view name() const override { return "kernel"; }
  void Observe(const Observation& obs) override;
  std::vector<Finding> Findings() const override;
  // Moves with every kernel-log observation folded (Findings() also reads the shared
  // inventory: a caller caching on Revision() must watch that too).
  std::optional<uint64_t> Revision() const override { return revision_; }

  // Entries held across every rule's state (groups, window entries, index entries): bounded
  // by the options whatever the history (tests assert it; benchmarks print it).
  size_t StateSize() const;

  struct State;  // defined in kernel_detector.cc

 private:
  // Drops what options_.horizon_ns says is forgotten, once the log's time has moved an
  // eighth of the horizon since the last sweep (a sweep costs the entries held).
  void ForgetOldEvents(int64_t line_time_ns);

  KernelDetectorOptions options_;
  Inventory inventory_;
  const Inventory* shared_ = nullptr;
  std::unique_ptr<State> state_;
  uint64_t revision_ = 0;
};

}  // namespace faultline
