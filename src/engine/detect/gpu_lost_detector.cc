// A GPU the driver lost (layer 2): NVML answers GPU_IS_LOST (the GPU fell off the bus,
// XID 79) or RESET_REQUIRED. Action, and why:
//  - GPU_IS_LOST: reboot_node. The device no longer answers on PCIe, so an in-place
//    reset (nvidia-smi -r) cannot reach it; NVIDIA's recovery for XID 79 is a node
//    reboot (a cold power cycle if it persists). The jobs on the GPU are already dead.
//  - RESET_REQUIRED: reset_gpu. The device still answers and asks for a reset.
//  - The same GPU lost again after it came back (repeat_losses_for_drain losses):
//    drain, then RMA. A repeat points at the GPU, its riser or slot, not a one-off.
#include <map>

#include "engine/detect/gpu_common.h"
#include "engine/detect/gpu_detectors.h"

namespace faultline {
namespace {

constexpr std::string_view kRule = "gpu_lost";

struct GpuState {
  bool lost = false;
  int losses = 0;
};

class GpuLostDetector final : public Detector {
 public:
  explicit GpuLostDetector(const GpuLostOptions& options) : options_(options), book_(options.max_evidence) {}
  std::string_view name() const override { return "gpu_lost"; }

  void Observe(const Observation& obs) override {
    if (obs.layer != Layer::kGpu || obs.component.type != ComponentType::kGpu) return;
    ++revision_;
    GpuState& st = gpus_[obs.component.Id()];
    if (obs.kind != ObsKind::kGpuLost) {
      st.lost = false;  // the GPU answers again (identity or a reading): a later loss is a repeat
      return;
    }
    if (st.lost) return book_.Touch(kRule, obs);
    st.lost = true;
    ++st.losses;
    const std::string error(GpuAttrOr(obs, "error", "GPU_IS_LOST"));
    Finding& f = book_.Upsert(kRule, obs);
    f.fault_class = FaultClass::kGpuFellOffBus;
    f.severity = Severity::kFatal;
    f.confidence = 0.95;
    f.attrs["error"] = error;
    f.attrs["losses"] = std::to_string(st.losses);
    f.attrs.erase("then");
    if (st.losses >= options_.repeat_losses_for_drain) {
      f.action = Action::kDrain;
      f.attrs["then"] = "rma";
      f.summary = obs.component.Id() + " lost again (" + error + ", " + std::to_string(st.losses) +
                  " times): drain the node, then RMA the GPU (or its riser/slot)";
    } else if (error == "RESET_REQUIRED") {
      f.action = Action::kResetGpu;
      f.summary = obs.component.Id() + " requires a reset (" + error + "): reset the GPU";
    } else {
      f.action = Action::kRebootNode;
      f.summary = obs.component.Id() + " fell off the bus (" + error +
                  "): it no longer answers on PCIe, so reboot the node; an in-place reset cannot reach it";
    }
  }

  std::vector<Finding> Findings() const override { return book_.All(); }
  std::optional<uint64_t> Revision() const override { return revision_; }

 private:
  GpuLostOptions options_;
  GpuFindingBook book_;
  std::map<std::string, GpuState> gpus_;
  uint64_t revision_ = 0;
};

}  // namespace

std::unique_ptr<Detector> MakeGpuLostDetector(const GpuLostOptions& options) {
  return std::make_unique<GpuLostDetector>(options);
}

}  // namespace faultline
