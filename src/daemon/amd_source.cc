// The agent's AMD Instinct source: one AmdCollector (sources/amdsmi) sampled at the
// [amd] interval. The collector falls back to the amdgpu sysfs files by itself when AMD
// SMI cannot be loaded, so the source is never "unavailable" for a missing library; it
// is when neither the library nor any amdgpu card shows a GPU (a node without AMD GPUs
// that enabled [amd] by mistake): the agent logs that once and retries with back-off.
#include "daemon/sources.h"
#include "sources/amdsmi/amd_collector.h"

namespace faultline::daemon {
namespace {

class AmdSource final : public AgentSource {
 public:
  AmdSource(const AmdSection& options, std::string root, std::string node, const Clock& clock)
      : options_(options), root_(std::move(root)), node_(std::move(node)), clock_(clock) {}

  std::string name() const override { return "amd"; }
  Layer layer() const override { return Layer::kGpu; }

  Result<SourceBatch> Poll(int64_t /*deadline_mono_ns*/) override {
    if (collector_ == nullptr) {
      amdsmi::AmdOptions o;
      o.library_path = options_.library_path;
      o.use_library = options_.use_library;
      o.sysfs_root = root_;
      o.node = node_;
      o.clock = &clock_;
      collector_ = amdsmi::AmdCollector::Open(std::move(o));
    }
    amdsmi::AmdSample sample = collector_->Sample();
    if (sample.gpu_count == 0 && sample.observations.empty()) {
      std::string why = "amd: no AMD GPU (" + collector_->library_status() + "; no amdgpu card under " + root_ + ")";
      collector_.reset();  // try the library again at the next poll
      return Status(StatusCode::kUnavailable, why);
    }
    SourceBatch batch;
    for (const amdsmi::AmdError& e : sample.errors) batch.warnings.push_back("amd: " + e.message);
    for (std::string& n : sample.notes) batch.warnings.push_back("amd: " + std::move(n));
    batch.observations = std::move(sample.observations);
    return batch;
  }

 private:
  AmdSection options_;
  std::string root_, node_;
  const Clock& clock_;
  std::unique_ptr<amdsmi::AmdCollector> collector_;
};

}  // namespace

std::unique_ptr<AgentSource> MakeAmdSource(const AmdSection& options, const std::string& root, const std::string& node,
                                           const Clock& clock) {
  return std::make_unique<AmdSource>(options, root, node, clock);
}

}  // namespace faultline::daemon
