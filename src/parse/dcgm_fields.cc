#include "parse/dcgm_fields.h"

#include <array>

namespace faultline {
namespace {

using R = DcgmFieldRole;
using K = ObsKind;
constexpr Layer kG = Layer::kGpu;
constexpr Layer kF = Layer::kFabric;

constexpr std::array kFields = {
    DcgmField{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310, R::kObservation, K::kEccSbe, kG, "counter", "volatile"},
    DcgmField{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311, R::kObservation, K::kEccDbe, kG, "counter", "volatile"},
    DcgmField{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 312, R::kObservation, K::kEccSbe, kG, "counter", "aggregate"},
    DcgmField{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 313, R::kObservation, K::kEccDbe, kG, "counter", "aggregate"},
    DcgmField{"DCGM_FI_DEV_RETIRED_SBE", 390, R::kObservation, K::kRetiredPages, kG, "cause", "sbe"},
    DcgmField{"DCGM_FI_DEV_RETIRED_DBE", 391, R::kObservation, K::kRetiredPages, kG, "cause", "dbe"},
    DcgmField{"DCGM_FI_DEV_RETIRED_PENDING", 392, R::kObservation, K::kRetiredPagesPending, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393, R::kObservation, K::kRowRemapUncorrectable, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394, R::kObservation, K::kRowRemapCorrectable, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_FAILURE", 395, R::kObservation, K::kRowRemapFailure, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_PENDING", 396, R::kObservation, K::kRowRemapPending, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112, R::kObservation, K::kClockThrottle, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112, R::kObservation, K::kClockThrottle, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_SM_CLOCK", 100, R::kObservation, K::kClock, kG, "clock", "sm"},
    DcgmField{"DCGM_FI_DEV_MEM_CLOCK", 101, R::kObservation, K::kClock, kG, "clock", "mem"},
    DcgmField{"DCGM_FI_DEV_MEMORY_TEMP", 140, R::kObservation, K::kTemperature, kG, "sensor", "memory"},
    DcgmField{"DCGM_FI_DEV_GPU_TEMP", 150, R::kObservation, K::kTemperature, kG, "sensor", "gpu"},
    DcgmField{"DCGM_FI_DEV_GPU_MAX_OP_TEMP", 152, R::kGpuMaxOpTemp, K::kTemperature, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_MEM_MAX_OP_TEMP", 151, R::kMemMaxOpTemp, K::kTemperature, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_POWER_USAGE", 155, R::kObservation, K::kPower, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 164, R::kObservation, K::kPowerLimit, kG, "", ""},
    DcgmField{"DCGM_FI_DEV_XID_ERRORS", 230, R::kObservation, K::kXid, Layer::kOs, "gauge", "last_xid"},
    DcgmField{"DCGM_FI_DEV_POWER_VIOLATION", 240, R::kObservation, K::kOther, kG, "metric", "power_violation_us"},
    DcgmField{"DCGM_FI_DEV_THERMAL_VIOLATION", 241, R::kObservation, K::kOther, kG, "metric", "thermal_violation_us"},
    DcgmField{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 202, R::kObservation, K::kPcieReplay, kF, "", ""},
    DcgmField{"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", 235, R::kMaxPcieGen, K::kPcieLinkGen, kF, "", ""},
    DcgmField{"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 236, R::kMaxPcieWidth, K::kPcieLinkWidth, kF, "", ""},
    DcgmField{"DCGM_FI_DEV_PCIE_LINK_GEN", 237, R::kObservation, K::kPcieLinkGen, kF, "", ""},
    DcgmField{"DCGM_FI_DEV_PCIE_LINK_WIDTH", 238, R::kObservation, K::kPcieLinkWidth, kF, "", ""},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 409, R::kObservation, K::kNvlinkCrcFlit, kF, "scope",
              "total"},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", 419, R::kObservation, K::kNvlinkCrcData, kF, "scope",
              "total"},
    DcgmField{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 429, R::kObservation, K::kNvlinkReplay, kF, "scope",
              "total"},
    DcgmField{"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 439, R::kObservation, K::kNvlinkRecovery, kF, "scope",
              "total"},
};

}  // namespace

std::span<const DcgmField> DcgmFields() { return kFields; }

const DcgmField* FindDcgmField(std::string_view metric) {
  for (const DcgmField& f : kFields) {
    if (f.metric == metric) return &f;
  }
  return nullptr;
}

}  // namespace faultline
