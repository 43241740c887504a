// The slice of the NVML C ABI (libnvidia-ml.so.1) that faultline uses, declared here
// because no NVIDIA header ships in Debian main. NVML is a stable C ABI: the values and
// layouts below follow NVIDIA's public NVML API reference (nvml.h); each constant names
// the nvml.h identifier it mirrors. Shared by the collector (which calls these through
// dlsym'd pointers) and the fake library in src/sim/fake_nvml (which exports them).
//
// Only add what a caller needs, and verify every value against the NVML reference.
#pragma once

#include <cstdint>

namespace faultline::nvml {

// nvmlReturn_t: every NVML call returns one of these.
using NvmlReturn = int;
inline constexpr NvmlReturn kSuccess = 0;                     // NVML_SUCCESS
inline constexpr NvmlReturn kErrorUninitialized = 1;          // NVML_ERROR_UNINITIALIZED
inline constexpr NvmlReturn kErrorInvalidArgument = 2;        // NVML_ERROR_INVALID_ARGUMENT
inline constexpr NvmlReturn kErrorNotSupported = 3;           // NVML_ERROR_NOT_SUPPORTED
inline constexpr NvmlReturn kErrorNoPermission = 4;           // NVML_ERROR_NO_PERMISSION
inline constexpr NvmlReturn kErrorAlreadyInitialized = 5;     // NVML_ERROR_ALREADY_INITIALIZED
inline constexpr NvmlReturn kErrorNotFound = 6;               // NVML_ERROR_NOT_FOUND
inline constexpr NvmlReturn kErrorInsufficientSize = 7;       // NVML_ERROR_INSUFFICIENT_SIZE
inline constexpr NvmlReturn kErrorInsufficientPower = 8;      // NVML_ERROR_INSUFFICIENT_POWER
inline constexpr NvmlReturn kErrorDriverNotLoaded = 9;        // NVML_ERROR_DRIVER_NOT_LOADED
inline constexpr NvmlReturn kErrorTimeout = 10;               // NVML_ERROR_TIMEOUT
inline constexpr NvmlReturn kErrorIrqIssue = 11;              // NVML_ERROR_IRQ_ISSUE
inline constexpr NvmlReturn kErrorLibraryNotFound = 12;       // NVML_ERROR_LIBRARY_NOT_FOUND
inline constexpr NvmlReturn kErrorFunctionNotFound = 13;      // NVML_ERROR_FUNCTION_NOT_FOUND
inline constexpr NvmlReturn kErrorCorruptedInforom = 14;      // NVML_ERROR_CORRUPTED_INFOROM
inline constexpr NvmlReturn kErrorGpuIsLost = 15;             // NVML_ERROR_GPU_IS_LOST
inline constexpr NvmlReturn kErrorResetRequired = 16;         // NVML_ERROR_RESET_REQUIRED
inline constexpr NvmlReturn kErrorOperatingSystem = 17;       // NVML_ERROR_OPERATING_SYSTEM
inline constexpr NvmlReturn kErrorLibRmVersionMismatch = 18;  // NVML_ERROR_LIB_RM_VERSION_MISMATCH
inline constexpr NvmlReturn kErrorInUse = 19;                 // NVML_ERROR_IN_USE
inline constexpr NvmlReturn kErrorMemory = 20;                // NVML_ERROR_MEMORY
inline constexpr NvmlReturn kErrorNoData = 21;                // NVML_ERROR_NO_DATA
inline constexpr NvmlReturn kErrorUnknown = 999;              // NVML_ERROR_UNKNOWN

// nvmlDevice_t: an opaque handle owned by the library.
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;

// nvmlEnableState_t
inline constexpr int kFeatureDisabled = 0;  // NVML_FEATURE_DISABLED
inline constexpr int kFeatureEnabled = 1;   // NVML_FEATURE_ENABLED

// nvmlMemoryErrorType_t
inline constexpr int kMemoryErrorCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
// nvmlEccCounterType_t
inline constexpr int kVolatileEcc = 0;   // NVML_VOLATILE_ECC
inline constexpr int kAggregateEcc = 1;  // NVML_AGGREGATE_ECC
// nvmlMemoryLocation_t (DRAM and DEVICE_MEMORY share 2: DRAM on Turing+, DEVICE_MEMORY before).
inline constexpr int kLocationL1Cache = 0;        // NVML_MEMORY_LOCATION_L1_CACHE
inline constexpr int kLocationL2Cache = 1;        // NVML_MEMORY_LOCATION_L2_CACHE
inline constexpr int kLocationDram = 2;           // NVML_MEMORY_LOCATION_DRAM
inline constexpr int kLocationRegisterFile = 3;   // NVML_MEMORY_LOCATION_REGISTER_FILE
inline constexpr int kLocationTextureMemory = 4;  // NVML_MEMORY_LOCATION_TEXTURE_MEMORY
inline constexpr int kLocationTextureShm = 5;     // NVML_MEMORY_LOCATION_TEXTURE_SHM
inline constexpr int kLocationCbu = 6;            // NVML_MEMORY_LOCATION_CBU
inline constexpr int kLocationSram = 7;           // NVML_MEMORY_LOCATION_SRAM
inline constexpr int kLocationCount = 8;          // NVML_MEMORY_LOCATION_COUNT

// nvmlPageRetirementCause_t
inline constexpr int kRetireMultipleSbe = 0;  // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
inline constexpr int kRetireDbe = 1;          // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR

// nvmlTemperatureSensors_t
inline constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
// nvmlTemperatureThresholds_t
inline constexpr int kThresholdShutdown = 0;  // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
inline constexpr int kThresholdSlowdown = 1;  // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN

// nvmlClockType_t
inline constexpr int kClockGraphics = 0;  // NVML_CLOCK_GRAPHICS
inline constexpr int kClockSm = 1;        // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;       // NVML_CLOCK_MEM

// nvmlNvLinkErrorCounter_t
inline constexpr int kNvlinkDlReplay = 0;    // NVML_NVLINK_ERROR_DL_REPLAY
inline constexpr int kNvlinkDlRecovery = 1;  // NVML_NVLINK_ERROR_DL_RECOVERY
inline constexpr int kNvlinkDlCrcFlit = 2;   // NVML_NVLINK_ERROR_DL_CRC_FLIT
inline constexpr int kNvlinkDlCrcData = 3;   // NVML_NVLINK_ERROR_DL_CRC_DATA
inline constexpr int kNvlinkMaxLinks = 18;   // NVML_NVLINK_MAX_LINKS

// Field ids for nvmlDeviceGetFieldValues.
inline constexpr unsigned kFieldMemoryTemp = 82;  // NVML_FI_DEV_MEMORY_TEMP (HBM temperature, degC)

// Buffer sizes the API documents for string queries.
inline constexpr unsigned kNameBufferSize = 96;    // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kUuidBufferSize = 96;    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kSerialBufferSize = 30;  // NVML_DEVICE_SERIAL_BUFFER_SIZE

// nvmlPciInfo_t (as filled by nvmlDeviceGetPciInfo_v3).
struct NvmlPciInfo {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:18:00.0"
};

// nvmlValueType_t
inline constexpr int kValueDouble = 0;            // NVML_VALUE_TYPE_DOUBLE
inline constexpr int kValueUnsignedInt = 1;       // NVML_VALUE_TYPE_UNSIGNED_INT
inline constexpr int kValueUnsignedLong = 2;      // NVML_VALUE_TYPE_UNSIGNED_LONG
inline constexpr int kValueUnsignedLongLong = 3;  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
inline constexpr int kValueSignedLongLong = 4;    // NVML_VALUE_TYPE_SIGNED_LONG_LONG
inline constexpr int kValueSignedInt = 5;         // NVML_VALUE_TYPE_SIGNED_INT
inline constexpr int kValueUnsignedShort = 6;     // NVML_VALUE_TYPE_UNSIGNED_SHORT

// nvmlValue_t
union NvmlValue {
  double d_val;
  unsigned int ui_val;
  unsigned long ul_val;        // NOLINT(runtime/int): ABI type
  unsigned long long ull_val;  // NOLINT(runtime/int): ABI type
  long long sll_val;           // NOLINT(runtime/int): ABI type
  int si_val;
  unsigned short us_val;  // NOLINT(runtime/int): ABI type
};

// nvmlFieldValue_t
struct NvmlFieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;     // NOLINT(runtime/int): ABI type
  long long latency_usec;  // NOLINT(runtime/int): ABI type
  int value_type;          // nvmlValueType_t
  NvmlReturn nvml_return;
  NvmlValue value;
};

// nvmlEventSet_t: an opaque handle owned by the library.
struct NvmlEventSetOpaque;
using NvmlEventSet = NvmlEventSetOpaque*;

// nvmlEventType bits (nvmlDeviceRegisterEvents / nvmlDeviceGetSupportedEventTypes).
inline constexpr unsigned long long kEventSingleBitEcc = 0x1;       // NOLINT(runtime/int)
inline constexpr unsigned long long kEventDoubleBitEcc = 0x2;       // NOLINT(runtime/int)
inline constexpr unsigned long long kEventXidCritical = 0x8;        // NOLINT(runtime/int)
inline constexpr unsigned long long kEventGpuUnavailable = 0x4000;  // NOLINT(runtime/int)

// nvmlEventData_t
struct NvmlEventData {
  NvmlDevice device;
  unsigned long long event_type;  // NOLINT(runtime/int): ABI type
  unsigned long long event_data;  // NOLINT(runtime/int): ABI type; the XID for kEventXidCritical
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t layout");
static_assert(sizeof(NvmlEventData) == 32, "nvmlEventData_t layout");
static_assert(sizeof(NvmlFieldValue) == 40, "nvmlFieldValue_t layout");

}  // namespace faultline::nvml
