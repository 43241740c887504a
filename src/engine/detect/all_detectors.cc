#include "engine/detect/all_detectors.h"

#include <array>

#include "engine/detect/amd_detector.h"
#include "engine/detect/fabric_ib.h"
#include "engine/detect/fabric_nvlink.h"
#include "engine/detect/fabric_pcie.h"
#include "engine/detect/fabric_roce.h"
#include "engine/detect/gpu_detectors.h"
#include "engine/detect/kernel_detector.h"
#include "engine/detect/oob_detectors.h"
#include "engine/detect/workload_detector.h"

namespace faultline {
namespace {

std::unique_ptr<Detector> Kernel(const DetectorContext& c) {
  return std::make_unique<KernelDetector>(KernelDetectorOptions{.horizon_ns = c.event_horizon_ns}, Inventory{},
                                          c.inventory);
}
std::unique_ptr<Detector> Amdgpu(const DetectorContext&) { return MakeAmdDetector({}); }
std::unique_ptr<Detector> GpuMemory(const DetectorContext&) { return MakeGpuMemoryDetector({}); }
std::unique_ptr<Detector> GpuSbe(const DetectorContext&) { return MakeGpuSbeDetector({}); }
std::unique_ptr<Detector> GpuThrottle(const DetectorContext&) { return MakeGpuThrottleDetector({}); }
std::unique_ptr<Detector> GpuLost(const DetectorContext&) { return MakeGpuLostDetector({}); }
std::unique_ptr<Detector> OobPower(const DetectorContext&) { return MakeOobPowerDetector({}); }
std::unique_ptr<Detector> OobThermal(const DetectorContext&) { return MakeOobThermalDetector({}); }
std::unique_ptr<Detector> OobEvent(const DetectorContext&) { return MakeOobEventDetector({}); }
std::unique_ptr<Detector> Pcie(const DetectorContext& c) {
  return std::make_unique<PcieFabricDetector>(FabricOptions{}, c.topology);
}
std::unique_ptr<Detector> Nvlink(const DetectorContext& c) {
  return std::make_unique<NvlinkFabricDetector>(FabricOptions{}, c.topology);
}
std::unique_ptr<Detector> Ib(const DetectorContext& c) {
  return std::make_unique<IbFabricDetector>(FabricOptions{}, c.topology);
}
std::unique_ptr<Detector> Roce(const DetectorContext& c) {
  return std::make_unique<RoceFabricDetector>(RoceOptions{}, c.topology);
}
std::unique_ptr<Detector> Workload(const DetectorContext& c) {
  WorkloadOptions options;
  options.window_ns = c.history_ns;
  return MakeWorkloadDetector(options);
}

constexpr std::array kTable{
    DetectorDescriptor{"kernel", "kernel log events and GPU identity lines (source kmsg)", Kernel},
    DetectorDescriptor{"amdgpu", "amdgpu kernel lines: RAS errors, bad-page threshold, resets, ring timeouts (source kmsg)",
                       Amdgpu},
    DetectorDescriptor{"gpu_memory", "ECC, row remapping, retired pages (NVML, dcgm-exporter)", GpuMemory},
    DetectorDescriptor{"gpu_sbe", "correctable ECC counters (NVML, dcgm-exporter)", GpuSbe},
    DetectorDescriptor{"gpu_throttle", "clock event reasons, GPU/HBM temperatures (NVML, dcgm-exporter)", GpuThrottle},
    DetectorDescriptor{"gpu_lost", "GPU lost / reset required (NVML)", GpuLost},
    DetectorDescriptor{"oob_power", "PSU state, voltages, power vs capacity (Redfish, IPMI)", OobPower},
    DetectorDescriptor{"oob_thermal", "inlet, fans, pumps, coolant, leaks (Redfish, IPMI)", OobThermal},
    DetectorDescriptor{"oob_events", "SEL / event log entries and BMC events (Redfish, IPMI)", OobEvent},
    DetectorDescriptor{"fabric_pcie", "PCIe link state, AER and replay counters (sysfs, NVML)", Pcie},
    DetectorDescriptor{"fabric_nvlink", "NVLink counters and state (NVML, dcgm-exporter)", Nvlink},
    DetectorDescriptor{"fabric_ib", "InfiniBand port counters and state (sysfs)", Ib},
    DetectorDescriptor{"fabric_roce", "RoCE/Ethernet: congestion vs link faults (hw_counters, ethtool, sysfs)", Roce},
    DetectorDescriptor{"workload", "jobs' step times and throughput (workload reports)", Workload},
};

}  // namespace

std::span<const DetectorDescriptor> DetectorTable() { return kTable; }

std::vector<std::unique_ptr<Detector>> MakeAllDetectors(const DetectorContext& context) {
  std::vector<std::unique_ptr<Detector>> all;
  all.reserve(kTable.size());
  for (const DetectorDescriptor& d : kTable) all.push_back(d.make(context));
  return all;
}

}  // namespace faultline
