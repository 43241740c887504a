// The simulated node: physical state of an HGX-like box evolving in scenario time.
// Faults from the scenario change inputs (a PSU fails, inlet air heats up, a link
// downtrains); the model derives the consequences the way the hardware does (PSU
// capacity below load -> GPU power brake -> lower clocks -> slower steps; hot inlet ->
// hot GPUs -> thermal slowdown) and adds seeded background noise. Renderers
// (sim_node.h) publish this state through the real interfaces; nothing here does I/O.
//
// Deterministic: the same scenario and seed give the same state and events.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/node/node_scenario.h"
#include "sim/node/roce_model.h"

namespace faultline::sim {

inline constexpr int kNvlinksPerGpu = 18;

struct SimLink {
  bool active = true;
  uint64_t crc_flit = 0, crc_data = 0, replay = 0, recovery = 0;
};

struct SimGpu {
  double temp_gpu = 40, temp_mem = 45;
  double power_w = 0;
  double clock_sm = 1980, clock_mem = 2619;
  uint64_t reasons = 0;  // NVML clock event reasons mask
  uint64_t sbe_volatile = 0, sbe_aggregate = 0, dbe_volatile = 0, dbe_aggregate = 0;
  uint64_t sram_uncorrected = 0;
  uint32_t remap_correctable = 0, remap_uncorrectable = 0;
  bool remap_pending = false, remap_failure = false;
  uint32_t retired_sbe = 0, retired_dbe = 0;
  bool retired_pending = false;
  uint64_t pcie_replay = 0;
  int pcie_gen = 5, pcie_width = 16;
  bool lost = false;
  std::array<SimLink, kNvlinksPerGpu> links;
  // Fractional accumulators so low rates still produce whole counts over time.
  double sbe_acc = 0, replay_acc = 0, crc_acc = 0;
};

struct SimPsu {
  std::string state = "Enabled";  // Enabled, UnavailableOffline, Absent
  std::string health = "OK";      // OK, Warning, Critical
  double input_v = 230;
  double output_w = 0;
  double capacity_w = 3300;
  bool alert = false;  // predictive-failure alert (SMBAlert)
};

struct SimFan {
  std::string health = "OK";
  double rpm = 9800;
};

struct SimCoolant {
  double supply_c = 32, return_c = 40, flow_lpm = 60;
  std::string pump_health = "OK";
  std::string leak_state = "OK";  // LeakDetector DetectorState
};

// A kernel-log line the node printed (kmsg record: priority + text).
struct SimKmsg {
  double t = 0;
  int level = 4;
  std::string text;
};

// A System Event Log entry the BMC recorded (also pushed as a Redfish event).
struct SimSel {
  double t = 0;
  std::string message;
  std::string message_id;   // Redfish registry id, "" when none
  std::string sensor_type;  // "Power Supply", "Fan", "Temperature", ...
  std::string severity = "Warning";
  std::string entry_code = "Assert";
  std::string origin;  // OriginOfCondition: the resource the entry is about
};

struct SimIbPort {
  int state = 4, phys_state = 5;  // ACTIVE / LinkUp
  uint64_t symbol_error = 0, link_downed = 0, rcv_error = 0, link_error_recovery = 0;
  double acc = 0;
};

struct SimPcieLink {  // sysfs view of one device's link and AER counters
  double speed_gts = 32;
  int width = 16;
  uint64_t aer_corrected = 0;       // corrected errors the device logs (filed as BadTLP)
  uint64_t port_aer_corrected = 0;  // ... and the port above it, when the link itself is bad (BadDLLP)
  double acc = 0;
};

struct NodeState {
  double t = 0;
  std::vector<SimGpu> gpus;
  std::vector<SimPsu> psus;
  std::vector<SimFan> fans;
  SimCoolant coolant;
  double inlet_c = 24;
  double load_w = 0;      // what the node draws
  double capacity_w = 0;  // what the working PSUs can deliver
  bool power_brake = false;
  std::vector<SimIbPort> ib;          // per HCA
  std::vector<SimPcieLink> gpu_pcie;  // per GPU (endpoint side; the upstream port mirrors it)
  std::vector<SimPcieLink> nic_pcie;  // Ethernet NICs
  std::vector<SimRocePort> roce;      // per HCA on a RoCE node (node.fabric: roce), else empty
  bool nvml_init_fails = false;       // driver/library version mismatch: nvmlInit cannot succeed
  bool job_running = true;
  double step_time_s = 1.0;
};

// Where the parts sit (PCIe addresses, device names): the renderers' fake sysfs tree
// decides, the model's kernel-log lines and the truth matcher follow.
struct NodeLayout {
  std::vector<std::string> gpu_bdfs;       // "0000:1b:00.0", one per GPU
  std::vector<std::string> nvswitch_bdfs;  // 4
  std::vector<std::string> hca_bdfs;       // 8 InfiniBand HCAs
  std::vector<std::string> hca_names;      // "mlx5_0", ...
  std::vector<std::string> nic_bdfs;       // Ethernet NICs
  std::string GpuUuid(int gpu) const;
  std::string GpuSerial(int gpu) const;
};

// A layout with made-up but well-formed addresses (unit tests of the model).
NodeLayout DefaultNodeLayout(int gpus);

class NodeModel {
 public:
  NodeModel(const NodeScenario& scenario, NodeLayout layout);

  // Moves the model to scenario time `t` in steps of at most `tick_s`. Earlier times
  // are ignored.
  void AdvanceTo(double t, double tick_s = 1.0);
  // Adds a fault as if the scenario had named it, beginning no earlier than now: lets a
  // benchmark inject a fault at a moment it chooses (bench agent-rest's GPU losses).
  void Inject(NodeFault f);

  const NodeState& state() const { return state_; }
  const NodeScenario& scenario() const { return scenario_; }
  // Events produced since the last Take (kernel log lines, SEL entries).
  std::vector<SimKmsg> TakeKmsg();
  std::vector<SimSel> TakeSel();
  // Workload step reports (one per step while the job runs): time and step time.
  struct StepReport {
    double t;
    uint64_t step;
    double step_time_s;
  };
  std::vector<StepReport> TakeSteps();

  const NodeLayout& layout() const { return layout_; }

 private:
  void Tick(double t, double dt);
  void StartFault(const NodeFault& f, double t);
  void ApplyContinuous(double t, double dt);
  void ApplyPower(double t);
  void ApplyThermal(double t);
  void ApplyWorkload(double t, double dt);
  void Noise(double t, double dt);
  bool Active(const NodeFault& f, double t) const;
  double Ramp(const NodeFault& f, double t) const;  // 0..1 progress of a ramped fault
  void Kmsg(double t, int level, std::string text);
  void Sel(double t, std::string message, std::string message_id, std::string sensor_type, std::string severity,
           std::string origin = "");
  std::string XidPrefix(int gpu) const;
  uint64_t Poisson(double mean);

  NodeScenario scenario_;
  NodeLayout layout_;
  NodeState state_;
  std::mt19937_64 rng_;
  size_t next_fault_ = 0;
  double job_step_acc_ = 0;
  uint64_t step_no_ = 0;
  double straggle_ = 1.0;
  std::vector<double> gpu_extra_c_;  // local cooling faults
  std::vector<SimKmsg> kmsg_;
  std::vector<SimSel> sel_;
  std::vector<StepReport> steps_;
  std::vector<bool> psu_failed_logged_;
  bool over_capacity_ = false;
};

}  // namespace faultline::sim
