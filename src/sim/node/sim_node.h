// One simulated node served through the real interfaces (DESIGN.md "Simulator"):
//  - out-of-band: a mock Redfish BMC over HTTPS on loopback (sim/mock_bmc), serving a
//    tree generated for this node (Power, Thermal, coolant loop, leak detectors, SEL);
//  - GPU: the fake NVML library's JSON state file ($FAKE_NVML_STATE), rewritten atomically;
//  - kernel log: a file of /dev/kmsg records ("prio,seq,usec,-;text");
//  - fabric: a fake sysfs tree (sim/fake_sysfs) with PCIe AER/link and InfiniBand files;
//  - workload: a file of step-time reports, as a training job appends them.
// An agent pointed at these (agent_config_for() in sim/harness) runs unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/fake_sysfs/fake_sysfs.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sim/node/amd_node.h"
#include "sim/node/node_model.h"

namespace faultline::sim {

// Maps scenario seconds to the clocks the interfaces stamp: UTC and CLOCK_BOOTTIME.
// speed > 1 fast-forwards (the real-time mode runs `speed` scenario seconds per second).
struct SimTimebase {
  int64_t epoch_ns = 0;  // UTC at scenario time 0
  int64_t boot_ns = 0;   // CLOCK_BOOTTIME at scenario time 0
  double speed = 1.0;
  int64_t Utc(double t) const { return epoch_ns + static_cast<int64_t>(t / speed * 1e9); }
  int64_t Boot(double t) const { return boot_ns + static_cast<int64_t>(t / speed * 1e9); }
};

struct SimNodeOptions {
  std::string workdir;  // created if absent; holds every file the node serves
  SimTimebase time;
  double tick_s = 1.0;  // model resolution
};

// What SimNode::AdvanceTo brings up to date besides the model. The kernel log, the
// workload file, the sysfs tree and the SEL always are (appended or changed in time
// order, and cheap when nothing changed). The NVML state file and the BMC's sensor
// resources (Power, Thermal, coolant loop, leak detectors, pumps, the manager's
// DateTime) are snapshots of the present: rebuilt only when asked. A snapshot left out
// at one step is not lost: the next step that asks writes the state of its own time, so a
// reader that only reads at steps that asked sees exactly what it would have seen had
// every step asked (the lockstep asks only when the NVML / Redfish source is due).
struct SimPublish {
  bool nvml = true;         // the NVML state file (an AMD node's AMD SMI state is always written)
  bool bmc_sensors = true;  // the BMC's sensor resources and DateTime
};

struct SimNodeStats {
  uint64_t kmsg_lines = 0;
  uint64_t sel_entries = 0;
  uint64_t step_reports = 0;
  uint64_t nvml_writes = 0;
  std::vector<std::string> errors;  // interface updates that failed (should stay empty)
};

class SimNode {
 public:
  struct NvmlGpuView;  // what the NVML state file says about one GPU (sim_node.cc)

  static Result<std::unique_ptr<SimNode>> Create(const NodeScenario& scenario, const SimNodeOptions& options);
  ~SimNode();
  SimNode(const SimNode&) = delete;
  SimNode& operator=(const SimNode&) = delete;

  // Moves the model to scenario time `t` and publishes the new state on every interface
  // (`what` may leave the NVML and BMC sensor snapshots as they were; see SimPublish).
  Status AdvanceTo(double t, SimPublish what = {});
  // A fault beginning now (NodeModel::Inject); the next AdvanceTo publishes it.
  void Inject(NodeFault f) { model_->Inject(std::move(f)); }

  const NodeModel& model() const { return *model_; }
  const SimTimebase& time() const { return options_.time; }
  const SimNodeStats& stats() const { return stats_; }
  double now() const { return model_->state().t; }

  // Where an agent finds the node.
  const std::string& kmsg_path() const { return kmsg_path_; }
  const std::string& nvml_state_path() const { return nvml_path_; }
  // The fake AMD SMI library's state file ($FAKE_AMDSMI_STATE); "" on an NVIDIA node.
  std::string amdsmi_state_path() const;
  const std::string& sysfs_root() const { return sysfs_root_; }
  const std::string& workload_path() const { return workload_path_; }
  std::string bmc_url() const;  // "" when the node has no BMC
  std::string bmc_ca_file() const;
  std::string bmc_user() const { return "admin"; }
  const std::string& bmc_password_file() const { return password_path_; }
  // A resource as the BMC serves it now (NotFound without a BMC).
  Result<std::string> BmcResource(const std::string& uri) const;
  // The PCIe port above a device ("" when none): both ends of its link.
  std::string PcieParentOf(const std::string& bdf) const;

 private:
  SimNode(const NodeScenario& scenario, SimNodeOptions options);
  Status Init();
  Status WriteBootLog();
  Status PublishKmsg();
  Status PublishNvml();
  Status PublishSysfs();
  Status PublishBmc(bool sensors);
  Status PublishBmcSensors();
  Status PublishSel();
  Status PublishWorkload();
  void Note(const Status& s);

  SimNodeOptions options_;
  NodeScenario scenario_;
  std::unique_ptr<NodeModel> model_;
  std::unique_ptr<FakeSysfsTree> tree_;
  std::unique_ptr<AmdPublisher> amd_;  // node.gpu_vendor: amd (sim/node/amd_node.h)
  std::unique_ptr<FakeEthernet> eth_;  // node.fabric: roce (sim/node/roce_model.h)
  std::unique_ptr<MockBmc> bmc_;
  std::string kmsg_path_, nvml_path_, sysfs_root_, workload_path_, password_path_, bmc_dir_;
  uint64_t kmsg_seq_ = 0;
  std::vector<SimKmsg> pending_kmsg_;  // lines whose time has not come yet
  std::vector<SimSel> pending_sel_;
  // What the sysfs tree holds now (so only changes are written).
  std::vector<SimPcieLink> sysfs_gpu_, sysfs_nic_;
  std::vector<SimIbPort> sysfs_ib_;
  std::vector<SimRocePort> sysfs_roce_;
  std::string last_nvml_;
  std::vector<NvmlGpuView> last_nvml_views_;  // what last_nvml_ was made from
  bool last_nvml_init_fails_ = false;
  bool nvml_published_ = false;
  std::string last_power_, last_thermal_, last_coolant_;
  SimNodeStats stats_;
};

}  // namespace faultline::sim
