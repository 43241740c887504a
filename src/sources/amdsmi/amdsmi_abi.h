// The slice of the AMD SMI C ABI (libamd_smi.so, header amd_smi/amdsmi.h) that faultline
// uses, declared here because no AMD header ships in Debian main. Shared by the
// collector (which calls these through dlsym'd pointers) and the fake library in
// src/sim/fake_amdsmi (which exports them).
//
// Values and layouts follow ROCm/amdsmi include/amd_smi/amdsmi.h (snapshot of Oct 2024,
// see SIGNALS-ethernet-amd.md B4); each constant names the amdsmi.h identifier it mirrors.
// Layouts marked [U] were not verified field by field against a header: every struct the
// library fills has a reserved tail at least as large as the real one, so a newer library
// that writes more cannot overrun it. Verify against the installed header before relying
// on a field (docs/amd.md "ABI").
#pragma once

#include <cstdint>

namespace faultline::amdsmi {

// amdsmi_status_t
using AmdsmiStatus = uint32_t;
inline constexpr AmdsmiStatus kSuccess = 0;                // AMDSMI_STATUS_SUCCESS
inline constexpr AmdsmiStatus kInval = 1;                  // AMDSMI_STATUS_INVAL
inline constexpr AmdsmiStatus kNotSupported = 2;           // AMDSMI_STATUS_NOT_SUPPORTED
inline constexpr AmdsmiStatus kNotYetImplemented = 3;      // AMDSMI_STATUS_NOT_YET_IMPLEMENTED
inline constexpr AmdsmiStatus kNoPerm = 10;                // AMDSMI_STATUS_NO_PERM
inline constexpr AmdsmiStatus kBusy = 30;                  // AMDSMI_STATUS_BUSY
inline constexpr AmdsmiStatus kNotFound = 31;              // AMDSMI_STATUS_NOT_FOUND
inline constexpr AmdsmiStatus kNotInit = 32;               // AMDSMI_STATUS_NOT_INIT
inline constexpr AmdsmiStatus kDriverNotLoaded = 34;       // AMDSMI_STATUS_DRIVER_NOT_LOADED
inline constexpr AmdsmiStatus kNoData = 40;                // AMDSMI_STATUS_NO_DATA
inline constexpr AmdsmiStatus kUnknownError = 0xFFFFFFFF;  // AMDSMI_STATUS_UNKNOWN_ERROR

// amdsmi_init_flags_t
inline constexpr uint64_t kInitAmdGpus = 1ULL << 1;  // AMDSMI_INIT_AMD_GPUS

// Opaque handles owned by the library.
using AmdsmiSocketHandle = void*;     // amdsmi_socket_handle
using AmdsmiProcessorHandle = void*;  // amdsmi_processor_handle

// amdsmi_bdf_t: a union of a 64-bit word and bit fields function:3, device:5, bus:8,
// domain:48 (low to high). [U] bit order as in the header.
struct AmdsmiBdf {
  uint64_t as_uint = 0;
  uint32_t function() const { return static_cast<uint32_t>(as_uint & 0x7); }
  uint32_t device() const { return static_cast<uint32_t>((as_uint >> 3) & 0x1f); }
  uint32_t bus() const { return static_cast<uint32_t>((as_uint >> 8) & 0xff); }
  uint64_t domain() const { return as_uint >> 16; }
  static AmdsmiBdf Make(uint64_t domain, uint32_t bus, uint32_t device, uint32_t function) {
    return AmdsmiBdf{(domain << 16) | (static_cast<uint64_t>(bus & 0xff) << 8) |
                     (static_cast<uint64_t>(device & 0x1f) << 3) | (function & 0x7)};
  }
};
static_assert(sizeof(AmdsmiBdf) == 8);

// amdsmi_gpu_block_t: RAS blocks, one bit each.
inline constexpr uint64_t kBlockUmc = 0x1;        // AMDSMI_GPU_BLOCK_UMC (HBM / VRAM)
inline constexpr uint64_t kBlockSdma = 0x2;       // AMDSMI_GPU_BLOCK_SDMA
inline constexpr uint64_t kBlockGfx = 0x4;        // AMDSMI_GPU_BLOCK_GFX
inline constexpr uint64_t kBlockMmhub = 0x8;      // AMDSMI_GPU_BLOCK_MMHUB
inline constexpr uint64_t kBlockAthub = 0x10;     // AMDSMI_GPU_BLOCK_ATHUB
inline constexpr uint64_t kBlockPcieBif = 0x20;   // AMDSMI_GPU_BLOCK_PCIE_BIF
inline constexpr uint64_t kBlockHdp = 0x40;       // AMDSMI_GPU_BLOCK_HDP
inline constexpr uint64_t kBlockXgmiWafl = 0x80;  // AMDSMI_GPU_BLOCK_XGMI_WAFL
inline constexpr uint64_t kBlockDf = 0x100;       // AMDSMI_GPU_BLOCK_DF
inline constexpr uint64_t kBlockSmn = 0x200;      // AMDSMI_GPU_BLOCK_SMN
inline constexpr uint64_t kBlockSem = 0x400;      // AMDSMI_GPU_BLOCK_SEM
inline constexpr uint64_t kBlockMp0 = 0x800;      // AMDSMI_GPU_BLOCK_MP0
inline constexpr uint64_t kBlockMp1 = 0x1000;     // AMDSMI_GPU_BLOCK_MP1
inline constexpr uint64_t kBlockFuse = 0x2000;    // AMDSMI_GPU_BLOCK_FUSE
inline constexpr uint64_t kBlockMca = 0x4000;     // AMDSMI_GPU_BLOCK_MCA
inline constexpr uint64_t kBlockVcn = 0x8000;     // AMDSMI_GPU_BLOCK_VCN
inline constexpr uint64_t kBlockJpeg = 0x10000;   // AMDSMI_GPU_BLOCK_JPEG
inline constexpr uint64_t kBlockIh = 0x20000;     // AMDSMI_GPU_BLOCK_IH
inline constexpr uint64_t kBlockMpio = 0x40000;   // AMDSMI_GPU_BLOCK_MPIO

// amdsmi_error_count_t
struct AmdsmiErrorCount {
  uint64_t correctable_count = 0;
  uint64_t uncorrectable_count = 0;
  uint64_t deferred_count = 0;  // UMC deferred / poison
  uint64_t reserved[5] = {};
};
static_assert(sizeof(AmdsmiErrorCount) == 64);

// amdsmi_memory_page_status_t (= sysfs gpu_vram_bad_pages flags R/P/F)
inline constexpr uint32_t kPageReserved = 0;      // AMDSMI_MEM_PAGE_STATUS_RESERVED
inline constexpr uint32_t kPagePending = 1;       // AMDSMI_MEM_PAGE_STATUS_PENDING
inline constexpr uint32_t kPageUnreservable = 2;  // AMDSMI_MEM_PAGE_STATUS_UNRESERVABLE

// amdsmi_retired_page_record_t
struct AmdsmiRetiredPageRecord {
  uint64_t page_address = 0;
  uint64_t page_size = 0;
  uint32_t status = kPageReserved;
};
static_assert(sizeof(AmdsmiRetiredPageRecord) == 24);

// amdsmi_xgmi_status_t
inline constexpr uint32_t kXgmiNoErrors = 0;        // AMDSMI_XGMI_STATUS_NO_ERRORS
inline constexpr uint32_t kXgmiError = 1;           // AMDSMI_XGMI_STATUS_ERROR
inline constexpr uint32_t kXgmiMultipleErrors = 2;  // AMDSMI_XGMI_STATUS_MULTIPLE_ERRORS

// amdsmi_temperature_type_t [U: values]
inline constexpr uint32_t kTempEdge = 0;     // AMDSMI_TEMPERATURE_TYPE_EDGE
inline constexpr uint32_t kTempHotspot = 1;  // AMDSMI_TEMPERATURE_TYPE_HOTSPOT (= JUNCTION)
inline constexpr uint32_t kTempVram = 2;     // AMDSMI_TEMPERATURE_TYPE_VRAM
// amdsmi_temperature_metric_t [U: values]
inline constexpr uint32_t kTempCurrent = 0;    // AMDSMI_TEMP_CURRENT
inline constexpr uint32_t kTempCritical = 5;   // AMDSMI_TEMP_CRITICAL
inline constexpr uint32_t kTempEmergency = 7;  // AMDSMI_TEMP_EMERGENCY

// amdsmi_power_info_t [U: layout] (watts, millivolts)
struct AmdsmiPowerInfo {
  uint32_t current_socket_power = 0;
  uint32_t average_socket_power = 0;
  uint64_t gfx_voltage = 0;
  uint64_t soc_voltage = 0;
  uint64_t mem_voltage = 0;
  uint32_t power_limit = 0;
  uint64_t reserved[18] = {};
};

// amdsmi_violation_status_t [U: layout] (MI300: throttling residencies). per_* in
// percent of the sampling period, active_* 1/0; all-ones = not supported.
struct AmdsmiViolationStatus {
  uint64_t reference_timestamp = 0;
  uint64_t violation_timestamp = 0;
  uint64_t acc_counter = 0;
  uint64_t acc_prochot_thrm = 0;
  uint64_t acc_ppt_pwr = 0;
  uint64_t acc_socket_thrm = 0;
  uint64_t acc_vr_thrm = 0;
  uint64_t acc_hbm_thrm = 0;
  uint64_t per_prochot_thrm = 0;
  uint64_t per_ppt_pwr = 0;
  uint64_t per_socket_thrm = 0;
  uint64_t per_vr_thrm = 0;
  uint64_t per_hbm_thrm = 0;
  uint8_t active_prochot_thrm = 0;
  uint8_t active_ppt_pwr = 0;
  uint8_t active_socket_thrm = 0;
  uint8_t active_vr_thrm = 0;
  uint8_t active_hbm_thrm = 0;
  uint64_t reserved[32] = {};
};

inline constexpr uint8_t kViolationUnsupported8 = 0xFF;

// Buffer sizes the collector hands the library.
inline constexpr unsigned kUuidBufferSize = 64;
inline constexpr uint32_t kMaxSockets = 64;
inline constexpr uint32_t kMaxProcessorsPerSocket = 64;
inline constexpr uint32_t kMaxBadPages = 65536;  // more is not believed (hostile library)

}  // namespace faultline::amdsmi
