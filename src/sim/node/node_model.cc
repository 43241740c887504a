#include "sim/node/node_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/node/amd_node.h"

namespace faultline::sim {
namespace {

constexpr double kNominalSmMhz = 1980;
constexpr double kGpuSlowdownC = 87;  // NVML slowdown threshold the fake reports
constexpr double kHbmSlowdownC = 95;
constexpr uint64_t kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80;

std::string Hex(uint64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*llx", width, static_cast<unsigned long long>(v));
  return buf;
}

std::string PsuUri(const std::string& psu) { return "/redfish/v1/Chassis/HGX/PowerSubsystem/PowerSupplies/" + psu; }

// "0000:1b:00.0" -> "0000:1b:00" (the NVRM "PCI:" form).
std::string NvrmBdf(const std::string& bdf) { return bdf.substr(0, bdf.rfind('.')); }

}  // namespace

std::string NodeLayout::GpuUuid(int gpu) const {
  return "GPU-5f1c0d2e-7a3b-4c1d-9e2f-0000000000" + Hex(static_cast<uint64_t>(gpu), 2);
}
std::string NodeLayout::GpuSerial(int gpu) const { return "16542230010" + Hex(static_cast<uint64_t>(gpu), 2); }

NodeLayout DefaultNodeLayout(int gpus) {
  NodeLayout l;
  for (int i = 0; i < gpus; ++i) l.gpu_bdfs.push_back("0000:" + Hex(0x18 + 0x10 * i, 2) + ":00.0");
  for (int i = 0; i < 4; ++i) l.nvswitch_bdfs.push_back("0000:" + Hex(0x05 + i, 2) + ":00.0");
  for (int i = 0; i < 8; ++i) {
    l.hca_bdfs.push_back("0000:" + Hex(0x19 + 0x10 * i, 2) + ":00.0");
    l.hca_names.push_back("mlx5_" + std::to_string(i));
  }
  l.nic_bdfs = {"0000:0c:00.0", "0000:8c:00.0"};
  return l;
}

NodeModel::NodeModel(const NodeScenario& scenario, NodeLayout layout)
    : scenario_(scenario), layout_(std::move(layout)), rng_(scenario.seed) {
  const NodeSpec& n = scenario_.node;
  state_.gpus.resize(static_cast<size_t>(n.gpus));
  state_.psus.resize(static_cast<size_t>(n.psus));
  for (SimPsu& p : state_.psus) p.capacity_w = n.psu_capacity_w;
  state_.fans.resize(static_cast<size_t>(n.fans));
  state_.inlet_c = n.inlet_c;
  state_.coolant.supply_c = n.coolant_supply_c;
  state_.coolant.flow_lpm = n.coolant_flow_lpm;
  state_.ib.resize(layout_.hca_names.size());
  state_.gpu_pcie.resize(state_.gpus.size());
  state_.nic_pcie.resize(layout_.nic_bdfs.size());
  if (scenario_.node.roce()) state_.roce = MakeRocePorts(layout_.hca_names.size());
  state_.job_running = scenario_.workload.enabled;
  state_.step_time_s = scenario_.workload.step_s;
  gpu_extra_c_.assign(state_.gpus.size(), 0);
  psu_failed_logged_.assign(state_.psus.size(), false);
  // Aged parts have history: lifetime SBE counts differ per GPU.
  for (size_t i = 0; i < state_.gpus.size(); ++i) state_.gpus[i].sbe_aggregate = 3 * i;
  ApplyContinuous(0, 0);
}

void NodeModel::AdvanceTo(double t, double tick_s) {
  if (tick_s <= 0) tick_s = 1.0;
  while (state_.t < t) {
    const double next = std::min(t, state_.t + tick_s);
    Tick(next, next - state_.t);
  }
}

std::vector<SimKmsg> NodeModel::TakeKmsg() { return std::exchange(kmsg_, {}); }
std::vector<SimSel> NodeModel::TakeSel() { return std::exchange(sel_, {}); }
std::vector<NodeModel::StepReport> NodeModel::TakeSteps() { return std::exchange(steps_, {}); }

void NodeModel::Tick(double t, double dt) {
  while (next_fault_ < scenario_.faults.size() && scenario_.faults[next_fault_].at <= t) {
    StartFault(scenario_.faults[next_fault_], scenario_.faults[next_fault_].at);
    ++next_fault_;
  }
  state_.t = t;
  Noise(t, dt);
  ApplyContinuous(t, dt);
  StepRoce(scenario_, t, dt, state_.roce);
  ApplyWorkload(t, dt);
}

void NodeModel::Inject(NodeFault f) {
  f.at = std::max(f.at, state_.t);
  // After every fault already started and in time order, as Tick expects.
  const auto from = scenario_.faults.begin() + static_cast<std::ptrdiff_t>(next_fault_);
  const auto at = std::upper_bound(from, scenario_.faults.end(), f.at,
                                   [](double t, const NodeFault& g) { return t < g.at; });
  scenario_.faults.insert(at, std::move(f));
}

bool NodeModel::Active(const NodeFault& f, double t) const { return f.at <= t && (!f.until || t < *f.until); }

double NodeModel::Ramp(const NodeFault& f, double t) const {
  if (f.ramp_s <= 0) return 1.0;
  return std::clamp((t - f.at) / f.ramp_s, 0.0, 1.0);
}

uint64_t NodeModel::Poisson(double mean) {
  if (mean <= 0) return 0;
  std::poisson_distribution<uint64_t> d(mean);
  return d(rng_);
}

void NodeModel::Kmsg(double t, int level, std::string text) { kmsg_.push_back({t, level, std::move(text)}); }

void NodeModel::Sel(double t, std::string message, std::string message_id, std::string sensor_type,
                    std::string severity, std::string origin) {
  sel_.push_back({t, std::move(message), std::move(message_id), std::move(sensor_type), std::move(severity), "Assert",
                  std::move(origin)});
}

std::string NodeModel::XidPrefix(int gpu) const {
  return "NVRM: Xid (PCI:" + NvrmBdf(layout_.gpu_bdfs.at(static_cast<size_t>(gpu))) + "): ";
}

// One-off consequences of a fault beginning: the lines the kernel prints, the SEL
// entries the BMC records, counters that jump once.
void NodeModel::StartFault(const NodeFault& f, double t) {
  // An AMD node says its GPU faults in amdgpu's words (sim/node/amd_node.h).
  if (scenario_.node.amd() &&
      AmdStartFault(f, t, state_, layout_, [this](double at, int level, std::string text) { Kmsg(at, level, std::move(text)); })) {
    return;
  }
  const std::string psu = "PSU" + std::to_string(f.psu);
  SimGpu* gpu = f.gpu >= 0 && static_cast<size_t>(f.gpu) < state_.gpus.size() ? &state_.gpus[f.gpu] : nullptr;
  const std::string pid = ", pid=" + std::to_string(41000 + static_cast<int>(t)) + ", name=python3, ";
  switch (f.kind) {
    case NodeFaultKind::kPsuFail:
      Sel(t, "Power Supply " + psu + " failure detected", "Power.1.0.PowerSupplyFailed", "Power Supply", "Critical",
          PsuUri(psu));
      break;
    case NodeFaultKind::kPsuDegrade:
      Sel(t, "Power Supply " + psu + " predictive failure", "Power.1.0.PowerSupplyPredictiveFailure", "Power Supply",
          "Warning", PsuUri(psu));
      break;
    case NodeFaultKind::kFeedLoss:
      for (int p : f.psus) {
        Sel(t, "Power Supply PSU" + std::to_string(p) + " input lost", "Power.1.0.LossOfInputPower", "Power Supply",
            "Critical", PsuUri("PSU" + std::to_string(p)));
      }
      break;
    case NodeFaultKind::kFanFail:
      Sel(t, "Fan FAN" + std::to_string(f.fan) + " failed", "Environmental.1.0.FanFailed", "Fan", "Critical",
          "/redfish/v1/Chassis/HGX/ThermalSubsystem/Fans/FAN" + std::to_string(f.fan));
      break;
    case NodeFaultKind::kPumpFail:
      Sel(t, "Pump PUMP1 failed", "Environmental.1.0.PumpFailed", "Cooling Device", "Critical",
          "/redfish/v1/Chassis/HGX/ThermalSubsystem/Pumps/PUMP1");
      break;
    case NodeFaultKind::kCoolantLeak:
      Sel(t, "Leak detected at ColdPlate", "Environmental.1.0.LeakDetected", "Cooling Device", "Critical",
          "/redfish/v1/Chassis/HGX/ThermalSubsystem/LeakDetection/LeakDetectors/ColdPlate");
      break;
    case NodeFaultKind::kDbe:
      if (!gpu) break;
      ++gpu->dbe_volatile;
      ++gpu->dbe_aggregate;
      Kmsg(t, 4,
           XidPrefix(f.gpu) + "48" + pid +
               "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
               "partition 6, subpartition 1.");
      if (f.value >= 1) {
        // The error hit a row that cannot be remapped again: no remap, only the DBE.
      } else if (scenario_.node.row_remap) {
        ++gpu->remap_uncorrectable;
        gpu->remap_pending = true;
        Kmsg(t + 0.001, 4,
             XidPrefix(f.gpu) +
                 "63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x0000000000a1c6e0) is "
                 "marked for remapping, reset gpu to activate.");
      } else {
        ++gpu->retired_dbe;
        gpu->retired_pending = true;
        Kmsg(t + 0.001, 4,
             XidPrefix(f.gpu) +
                 "63, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: New "
                 "page retired, reboot to activate (0x00000000012ab000).");
      }
      state_.job_running = false;
      break;
    case NodeFaultKind::kRemapFailure:
      if (!gpu) break;
      ++gpu->dbe_volatile;
      ++gpu->dbe_aggregate;
      gpu->remap_failure = true;
      Kmsg(t, 4,
           XidPrefix(f.gpu) + "48" + pid +
               "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
               "partition 2, subpartition 0.");
      Kmsg(t + 0.001, 4,
           XidPrefix(f.gpu) +
               "64, pid='<unknown>', name=<unknown>, Row Remapper: Failed to mark row "
               "(0x0000000000b2d7f0) for remapping.");
      state_.job_running = false;
      break;
    case NodeFaultKind::kSramUncorrectable:
      if (!gpu) break;
      ++gpu->sram_uncorrected;
      ++gpu->dbe_volatile;
      ++gpu->dbe_aggregate;
      Kmsg(t, 4, XidPrefix(f.gpu) + "95" + pid + "Uncontained: SRAM. RST: Yes, D-RST: No");
      state_.job_running = false;
      break;
    case NodeFaultKind::kGspTimeout:
      Kmsg(t, 4,
           XidPrefix(f.gpu) + "119" + pid + "Timeout after 6s of waiting for RPC response from GPU" +
               std::to_string(f.gpu) + " GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).");
      state_.job_running = false;
      break;
    case NodeFaultKind::kFallOffBus: {
      if (!gpu) break;
      const std::string bdf = NvrmBdf(layout_.gpu_bdfs[f.gpu]);
      Kmsg(t, 3, "NVRM: The NVIDIA GPU " + layout_.gpu_bdfs[f.gpu] + " (PCI ID: 10de:2335)");
      Kmsg(t, 3, "NVRM: installed in this system has fallen off the bus and is not responding to commands.");
      Kmsg(t + 0.001, 4, XidPrefix(f.gpu) + "79" + pid + "GPU has fallen off the bus.");
      gpu->lost = true;
      state_.gpu_pcie[f.gpu].width = 0;
      state_.job_running = false;
      break;
    }
    case NodeFaultKind::kDriverMismatch:
      Kmsg(t, 3,
           "NVRM: API mismatch: the client has the version 550.54.15, but this kernel module has the version "
           "535.161.08.  Please make sure that this kernel module and all NVIDIA driver components have the "
           "same version.");
      state_.nvml_init_fails = true;
      state_.job_running = false;
      break;
    case NodeFaultKind::kUserXid: {
      // One buggy process: one pid; its warps fault wherever they were scheduled.
      const std::string who = ", pid=" + std::to_string(52000 + static_cast<int>(t)) + ", name=python3, ";
      for (int i = 0; i < std::max(1, f.count); ++i) {
        std::string body;
        if (f.xid == 31) {
          body = "31" + who +
                 "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
                 "0x7f3a_12340000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ";
        } else if (f.xid == 43) {
          body = "43" + who + "Ch 00000010";
        } else {
          body = "13" + who + "Graphics SM Warp Exception on (GPC " + std::to_string(i % 8) + ", TPC " +
                 std::to_string((i * 3) % 9) + ", SM " + std::to_string(i % 2) + "): Out Of Range Address";
        }
        Kmsg(t + i * f.every_s, 4, XidPrefix(f.gpu) + body);
      }
      break;
    }
    case NodeFaultKind::kSegfault:
      Kmsg(t, 6,
           "python3[" + std::to_string(43000 + static_cast<int>(t)) +
               "]: segfault at 0 ip 00007f3a1c2b4e10 sp 00007ffd2a3b1c80 error 4 in libdataloader.so[7f3a1c200000+"
               "120000]");
      break;
    case NodeFaultKind::kHostMce:
      Kmsg(t, 2, "mce: [Hardware Error]: Machine check events logged");
      Kmsg(t, 2,
           "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 "
           "page:0x12345 offset:0x0 grain:32 - OVERFLOW err_code:0x0000:0x0090)");
      state_.job_running = false;
      break;
    case NodeFaultKind::kNvswitchFatal: {
      const std::string sw = "nvidia-nvswitch" + std::to_string(f.nvswitch);
      const std::string at = sw + ": SXid (PCI:" + layout_.nvswitch_bdfs.at(static_cast<size_t>(f.nvswitch)) + "): ";
      Kmsg(t, 3, at + "24007, Fatal, Link 44 sourcetrack timeout error (First)");
      Kmsg(t, 3, at + "24007, Severity 1 Engine instance 44 Sub-engine instance 00");
      Kmsg(t, 3, at + "24007, Data {0x00000000, 0x00000000, 0x00000001, 0x00000000}");
      for (size_t g = 0; g < state_.gpus.size(); ++g) {
        Kmsg(t + 0.01, 4,
             XidPrefix(static_cast<int>(g)) +
                 "74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
                 "detected on link " +
                 std::to_string(f.nvswitch) + "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)");
      }
      state_.job_running = false;
      break;
    }
    case NodeFaultKind::kIbDown: {
      if (f.hca < 0 || static_cast<size_t>(f.hca) >= state_.ib.size()) break;
      ++state_.ib[f.hca].link_downed;
      Kmsg(t, 4,
           "mlx5_core " + layout_.hca_bdfs[f.hca] +
               ": mlx5_port_module_event:1145:(pid 0): Port module "
               "event: module 1, Cable unplugged");
      break;
    }
    case NodeFaultKind::kNicAer:
      if (f.nic >= 0 && static_cast<size_t>(f.nic) < state_.nic_pcie.size() && f.ramp_s <= 0) {
        state_.nic_pcie[f.nic].aer_corrected += static_cast<uint64_t>(std::max(0.0, f.value));
      }
      break;
    case NodeFaultKind::kJobStop:
      state_.job_running = false;
      break;
    case NodeFaultKind::kKmsg:
      Kmsg(t, 4, f.text);
      break;
    case NodeFaultKind::kSel:
      Sel(t, f.text, "", "", f.severity);
      break;
    default:
      break;  // continuous faults act in ApplyContinuous
  }
}

void NodeModel::Noise(double t, double dt) {
  const NoiseSpec& n = scenario_.noise;
  if (dt <= 0) return;
  for (SimGpu& g : state_.gpus) {
    const uint64_t sbe = Poisson(n.sbe_per_gpu_hour * dt / 3600.0);
    g.sbe_volatile += sbe;
    g.sbe_aggregate += sbe;
  }
  if (!state_.gpus.empty() && Poisson(n.user_xid_per_hour * dt / 3600.0) > 0) {
    std::uniform_int_distribution<int> pick(0, static_cast<int>(state_.gpus.size()) - 1);
    const int g = pick(rng_);
    Kmsg(t, 4,
         XidPrefix(g) + "13, pid=" + std::to_string(60000 + static_cast<int>(t)) +
             ", name=python3, Graphics Exception: ESR 0x405840=0x4000000 0x405844=0x0 0x405848=0x0");
  }
  const uint64_t aer = Poisson(n.aer_corrected_per_hour * dt / 3600.0);
  for (uint64_t i = 0; i < aer && !state_.gpu_pcie.empty(); ++i) {
    std::uniform_int_distribution<int> pick(0, static_cast<int>(state_.gpu_pcie.size()) - 1);
    ++state_.gpu_pcie[pick(rng_)].aer_corrected;
  }
}

void NodeModel::ApplyPower(double t) {
  const NodeSpec& n = scenario_.node;
  for (SimPsu& p : state_.psus) p = SimPsu{.capacity_w = n.psu_capacity_w};
  double extra_load = 0;
  for (const NodeFault& f : scenario_.faults) {
    if (!Active(f, t)) continue;
    const double r = Ramp(f, t);
    auto psu = [&](int id) -> SimPsu* {
      return id >= 1 && static_cast<size_t>(id) <= state_.psus.size() ? &state_.psus[id - 1] : nullptr;
    };
    switch (f.kind) {
      case NodeFaultKind::kPsuFail:
        if (SimPsu* p = psu(f.psu)) *p = SimPsu{"UnavailableOffline", "Critical", 230, 0, 0, false};
        break;
      case NodeFaultKind::kPsuDegrade:
        if (SimPsu* p = psu(f.psu)) {
          p->health = "Warning";
          p->alert = true;
        }
        break;
      case NodeFaultKind::kFeedLoss:
        for (int id : f.psus) {
          if (SimPsu* p = psu(id)) *p = SimPsu{"UnavailableOffline", "Critical", 0, 0, 0, false};
        }
        break;
      case NodeFaultKind::kInputSag:
        for (int id : f.psus) {
          if (SimPsu* p = psu(id)) {
            p->input_v = 230 + (f.value - 230) * r;
            // Below the high-line range a PSU derates, and drops out under ~90 V.
            if (p->input_v < 200) p->capacity_w *= std::max(0.0, (p->input_v - 90) / 110);
          }
        }
        break;
      case NodeFaultKind::kPowerLoad:
        extra_load += f.value * r;
        break;
      default:
        break;
    }
  }
  // A degrading PSU that reached its end (`until`) is failed from then on.
  for (const NodeFault& f : scenario_.faults) {
    if (f.kind == NodeFaultKind::kPsuDegrade && f.until && t >= *f.until && f.psu >= 1 &&
        static_cast<size_t>(f.psu) <= state_.psus.size()) {
      state_.psus[f.psu - 1] = SimPsu{"UnavailableOffline", "Critical", 230, 0, 0, false};
      if (!psu_failed_logged_[f.psu - 1]) {
        psu_failed_logged_[f.psu - 1] = true;
        Sel(*f.until, "Power Supply PSU" + std::to_string(f.psu) + " failure detected", "Power.1.0.PowerSupplyFailed",
            "Power Supply", "Critical", PsuUri("PSU" + std::to_string(f.psu)));
      }
    }
  }
  double gpu_demand = 0;
  for (const SimGpu& g : state_.gpus) {
    if (!g.lost) gpu_demand += state_.job_running ? n.gpu_busy_w : 90;
  }
  state_.load_w = n.host_w + gpu_demand + extra_load;
  state_.capacity_w = 0;
  bool alert = false;
  int working = 0;
  for (const SimPsu& p : state_.psus) {
    if (p.state == "Enabled") {
      state_.capacity_w += p.capacity_w;
      ++working;
    }
    alert = alert || p.alert;
  }
  for (SimPsu& p : state_.psus) {
    if (p.state == "Enabled" && working > 0) p.output_w = state_.load_w / working;
  }
  const bool over = state_.load_w > state_.capacity_w;
  if (over && !over_capacity_) {
    Sel(t,
        "Power capacity exceeded: load " + std::to_string(static_cast<int>(state_.load_w)) + " W, capacity " +
            std::to_string(static_cast<int>(state_.capacity_w)) + " W",
        "Power.1.0.PowerCapacityExceeded", "Power Unit", "Critical", "/redfish/v1/Chassis/HGX");
  }
  over_capacity_ = over;
  state_.power_brake = over || (n.psu_alert_brakes && alert && state_.job_running);
}

void NodeModel::ApplyThermal(double t) {
  const NodeSpec& n = scenario_.node;
  state_.inlet_c = n.inlet_c;
  for (SimFan& f : state_.fans) f = SimFan{};
  state_.coolant = SimCoolant{.supply_c = n.coolant_supply_c, .flow_lpm = n.coolant_flow_lpm};
  std::fill(gpu_extra_c_.begin(), gpu_extra_c_.end(), 0.0);
  for (const NodeFault& f : scenario_.faults) {
    if (!Active(f, t)) continue;
    const double r = Ramp(f, t);
    switch (f.kind) {
      case NodeFaultKind::kInletHigh:
        state_.inlet_c = n.inlet_c + (f.value - n.inlet_c) * r;
        break;
      case NodeFaultKind::kFanFail:
        if (f.fan >= 1 && static_cast<size_t>(f.fan) <= state_.fans.size()) state_.fans[f.fan - 1] = {"Critical", 0};
        break;
      case NodeFaultKind::kPumpFail:
        state_.coolant.pump_health = "Critical";
        state_.coolant.flow_lpm = n.coolant_flow_lpm * (1 - 0.8 * r);
        break;
      case NodeFaultKind::kCoolantLeak:
        state_.coolant.leak_state = "Critical";
        state_.coolant.flow_lpm = std::min(state_.coolant.flow_lpm, n.coolant_flow_lpm * (1 - 0.6 * r));
        break;
      case NodeFaultKind::kGpuCooling:
        if (f.gpu >= 0 && static_cast<size_t>(f.gpu) < gpu_extra_c_.size()) gpu_extra_c_[f.gpu] = f.value * r;
        break;
      default:
        break;
    }
  }
  int failed_fans = 0;
  for (const SimFan& f : state_.fans) failed_fans += f.health != "OK";
  for (SimFan& f : state_.fans) {
    if (f.health == "OK") f.rpm = std::min(16000.0, 9800 + 1500.0 * failed_fans);  // the rest spin up
  }
  const double heat_kw = state_.load_w / 1000;
  state_.coolant.return_c = state_.coolant.supply_c + heat_kw * 0.8 * (60 / state_.coolant.flow_lpm);
  // GPU cold plates: supply temperature plus a rise that grows as flow drops; the air
  // path (inlet, fans) carries HBM and board heat.
  const double flow_rise = 38 * std::sqrt(60 / state_.coolant.flow_lpm);
  const double air = 1.0 * (state_.inlet_c - 24) + 6.0 * std::max(0, failed_fans - 1);
  const double wander = scenario_.noise.temp_wander_c * std::sin(t / 300.0);
  for (size_t i = 0; i < state_.gpus.size(); ++i) {
    SimGpu& g = state_.gpus[i];
    const double busy = state_.job_running ? 1.0 : 0.35;
    g.temp_gpu = state_.coolant.supply_c + flow_rise * busy + air + gpu_extra_c_[i] + wander + 0.4 * i;
    g.temp_mem = g.temp_gpu + 6 + 0.5 * air;
  }
}

void NodeModel::ApplyContinuous(double t, double dt) {
  ApplyPower(t);
  ApplyThermal(t);
  for (SimPcieLink& l : state_.gpu_pcie) {
    l.speed_gts = 32;
    if (l.width != 0) l.width = 16;
  }
  for (size_t i = 0; i < state_.gpus.size(); ++i) {
    SimGpu& g = state_.gpus[i];
    g.reasons = 0;
    double clock = kNominalSmMhz;
    if (g.temp_gpu >= kGpuSlowdownC || g.temp_mem >= kHbmSlowdownC) {
      g.reasons |= kHwThermal | kHwSlowdown | kSwThermal;
      clock *= 0.7;
    }
    if (state_.power_brake && state_.job_running) {
      g.reasons |= kHwPowerBrake | kHwSlowdown;
      clock = std::min(clock, kNominalSmMhz * 0.5);
    }
    g.clock_sm = g.lost ? 0 : clock;
    g.power_w = g.lost ? 0 : (state_.job_running ? scenario_.node.gpu_busy_w * clock / kNominalSmMhz : 90);
    g.pcie_gen = 5;
    g.pcie_width = state_.gpu_pcie[i].width == 0 ? 0 : 16;
  }
  for (SimIbPort& p : state_.ib) {
    p.state = 4;
    p.phys_state = 5;
  }
  for (const NodeFault& f : scenario_.faults) {
    if (!Active(f, t)) continue;
    SimGpu* gpu = f.gpu >= 0 && static_cast<size_t>(f.gpu) < state_.gpus.size() ? &state_.gpus[f.gpu] : nullptr;
    switch (f.kind) {
      case NodeFaultKind::kSbeStorm:
        if (gpu) {
          gpu->sbe_acc += f.value * dt / 3600.0;
          const auto n = static_cast<uint64_t>(gpu->sbe_acc);
          gpu->sbe_acc -= static_cast<double>(n);
          gpu->sbe_volatile += n;
          gpu->sbe_aggregate += n;
        }
        break;
      case NodeFaultKind::kPcieDowntrain:
        if (gpu) {
          SimPcieLink& l = state_.gpu_pcie[f.gpu];
          l.width = f.width > 0 ? f.width : 8;
          l.speed_gts = f.speed_gts > 0 ? f.speed_gts : 32;
          gpu->pcie_width = l.width;
          gpu->pcie_gen = l.speed_gts >= 32 ? 5 : l.speed_gts >= 16 ? 4 : l.speed_gts >= 8 ? 3 : 1;
        }
        break;
      case NodeFaultKind::kPcieReplay:
        if (gpu) {
          // value = replays per minute; each replay follows a corrected error (BadTLP/BadDLLP).
          gpu->replay_acc += f.value * dt / 60.0;
          const auto n = static_cast<uint64_t>(gpu->replay_acc);
          gpu->replay_acc -= static_cast<double>(n);
          gpu->pcie_replay += n;
          // A bad link is seen from both ends: the switch's downstream port logs it too.
          state_.gpu_pcie[f.gpu].aer_corrected += n;
          state_.gpu_pcie[f.gpu].port_aer_corrected += n;
        }
        break;
      case NodeFaultKind::kNicAer:
        if (f.ramp_s > 0 && f.nic >= 0 && static_cast<size_t>(f.nic) < state_.nic_pcie.size() && t < f.at + f.ramp_s) {
          SimPcieLink& l = state_.nic_pcie[f.nic];
          l.acc += f.value * dt / f.ramp_s;
          const auto n = static_cast<uint64_t>(l.acc);
          l.acc -= static_cast<double>(n);
          l.aer_corrected += n;
        }
        break;
      case NodeFaultKind::kNvlinkCrc:
        if (gpu && f.link >= 0) {
          gpu->crc_acc += f.value * dt;
          const auto n = static_cast<uint64_t>(gpu->crc_acc);
          gpu->crc_acc -= static_cast<double>(n);
          gpu->links[f.link].crc_flit += n;
          gpu->links[f.link].crc_data += n / 4;
          gpu->links[f.link].replay += n / 20;
        }
        break;
      case NodeFaultKind::kNvlinkDown:
        if (gpu && f.link >= 0) gpu->links[f.link].active = false;
        break;
      case NodeFaultKind::kNvswitchFatal:
        for (SimGpu& g : state_.gpus) {
          for (int l = f.nvswitch; l < kNvlinksPerGpu; l += 4) g.links[l].active = false;
        }
        break;
      case NodeFaultKind::kIbErrors:
        if (f.hca >= 0 && static_cast<size_t>(f.hca) < state_.ib.size()) {
          SimIbPort& p = state_.ib[f.hca];
          p.acc += f.value * dt / 60.0;
          const auto n = static_cast<uint64_t>(p.acc);
          p.acc -= static_cast<double>(n);
          p.symbol_error += n;
          p.rcv_error += n / 2;
        }
        break;
      case NodeFaultKind::kIbDown:
        if (f.hca >= 0 && static_cast<size_t>(f.hca) < state_.ib.size()) {
          state_.ib[f.hca].state = 1;       // DOWN
          state_.ib[f.hca].phys_state = 3;  // Disabled
        }
        break;
      default:
        break;
    }
  }
}

// Synchronous data-parallel training: every step waits for the slowest GPU and for the
// collectives, so one throttled GPU or one bad link slows the whole job.
void NodeModel::ApplyWorkload(double t, double dt) {
  if (!state_.job_running || dt <= 0) return;
  double slowest = 1.0;
  for (const SimGpu& g : state_.gpus) {
    if (g.clock_sm > 0) slowest = std::max(slowest, kNominalSmMhz / g.clock_sm);
  }
  double fabric = 1.0;
  for (size_t i = 0; i < state_.gpus.size(); ++i) {
    const SimPcieLink& l = state_.gpu_pcie[i];
    if (l.width > 0 && (l.width < 16 || l.speed_gts < 32)) fabric = std::max(fabric, 1.3);
  }
  straggle_ = 1.0;
  for (const NodeFault& f : scenario_.faults) {
    if (!Active(f, t)) continue;
    switch (f.kind) {
      case NodeFaultKind::kPcieReplay:
        fabric = std::max(fabric, f.value >= 100 ? 1.25 : 1.05);
        break;
      case NodeFaultKind::kNvlinkCrc:
        fabric = std::max(fabric, f.value >= 100 ? 1.3 : 1.1);
        break;
      case NodeFaultKind::kNvlinkDown:
        fabric = std::max(fabric, 1.35);
        break;
      case NodeFaultKind::kIbErrors:
        fabric = std::max(fabric, f.value >= 60 ? 1.25 : 1.05);
        break;
      case NodeFaultKind::kIbDown:
        fabric = std::max(fabric, 1.4);
        break;
      case NodeFaultKind::kStraggler:
        straggle_ = std::max(straggle_, 1 + (f.value - 1) * Ramp(f, t));
        break;
      default:
        break;
    }
  }
  fabric = std::max(fabric, RoceSlowdown(scenario_, t));
  std::normal_distribution<double> jitter(1.0, scenario_.noise.step_jitter);
  const double base = scenario_.workload.step_s * slowest * fabric * straggle_;
  job_step_acc_ += dt;
  while (job_step_acc_ >= state_.step_time_s) {
    job_step_acc_ -= state_.step_time_s;
    state_.step_time_s = std::max(0.01, base * (scenario_.noise.step_jitter > 0 ? jitter(rng_) : 1.0));
    steps_.push_back({t - job_step_acc_, ++step_no_, state_.step_time_s});
  }
}

}  // namespace faultline::sim
