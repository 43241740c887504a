#include "sources/nvml/nvml_gpu_reader.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "core/inventory.h"

namespace faultline::nvml {
namespace {

using Attrs = std::map<std::string, std::string>;

struct LocationName {
  int location;
  const char* name;
};

// Attribute names follow docs/nvml.md; DRAM shares its value with the pre-Turing
// DEVICE_MEMORY location, and every GPU this project targets is Turing or newer.
constexpr LocationName kLocations[] = {
    {kLocationL1Cache, "l1"},
    {kLocationL2Cache, "l2"},
    {kLocationDram, "dram"},
    {kLocationRegisterFile, "register_file"},
    {kLocationTextureMemory, "texture_memory"},
    {kLocationTextureShm, "texture_shm"},
    {kLocationCbu, "cbu"},
    {kLocationSram, "sram"},
};

struct LinkCounter {
  int counter;
  ObsKind kind;
  const char* name;
};

constexpr LinkCounter kLinkCounters[] = {
    {kNvlinkDlCrcFlit, ObsKind::kNvlinkCrcFlit, "DL_CRC_FLIT"},
    {kNvlinkDlCrcData, ObsKind::kNvlinkCrcData, "DL_CRC_DATA"},
    {kNvlinkDlReplay, ObsKind::kNvlinkReplay, "DL_REPLAY"},
    {kNvlinkDlRecovery, ObsKind::kNvlinkRecovery, "DL_RECOVERY"},
};

// A string out of a fixed NVML buffer; a library that forgets the terminator cannot
// make us read past the buffer.
std::string FromBuffer(const char* buf, size_t size) { return std::string(buf, strnlen(buf, size)); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

class GpuReader {
 public:
  GpuReader(const NvmlApi& api, const NvmlOptions& options, int64_t time_ns, unsigned index, NvmlDevice device,
            NvmlSample& out, bool slow)
      : slow_(slow),
        api_(api),
        options_(options),
        time_ns_(time_ns),
        index_(index),
        device_(device),
        out_(out),
        first_error_(out.errors.size()) {
    gpu_ = GpuComponent(std::to_string(index));
    gpu_.keys["index"] = gpu_.name;
  }

  void Read() {
    using Step = void (GpuReader::*)();
    struct Field {
      Step read;
      bool slow;  // NvmlOptions::slow_every
    };
    static constexpr Field kFields[] = {
        {&GpuReader::ReadIdentity, false},    {&GpuReader::ReadEcc, false},
        {&GpuReader::ReadEccLocations, true}, {&GpuReader::ReadRetiredPages, true},
        {&GpuReader::ReadRemappedRows, true}, {&GpuReader::ReadTemperatures, false},
        {&GpuReader::ReadPower, false},       {&GpuReader::ReadClocks, false},
        {&GpuReader::ReadClockReasons, false}, {&GpuReader::ReadPcie, false},
        {&GpuReader::ReadNvlinks, true},
    };
    for (const Field& f : kFields) {
      if (f.slow && !slow_) continue;
      (this->*f.read)();
      if (lost_) return;
    }
  }

 private:
  // True when the call succeeded. NOT_SUPPORTED is silent; a lost GPU emits kGpuLost
  // and stops the reader; anything else becomes an NvmlError.
  bool Ok(NvmlReturn rc, const char* call) {
    if (lost_) return false;
    switch (rc) {
      case kSuccess:
        return true;
      case kErrorNotSupported:
        return false;
      case kErrorGpuIsLost:
      case kErrorResetRequired:
        lost_ = true;
        out_.observations.push_back(GpuLostObservation(options_, time_ns_, gpu_, rc, call));
        return false;
      default:
        AddError(rc, call);
        return false;
    }
  }

  // One error per call and code per GPU and sample: a call failing for all 18 links or
  // 32 ECC locations is one fact, not 32.
  void AddError(NvmlReturn rc, const char* call) {
    for (size_t i = first_error_; i < out_.errors.size(); ++i) {
      if (out_.errors[i].code == rc && out_.errors[i].call == call) return;
    }
    out_.errors.push_back(NvmlError{static_cast<int>(index_), call, rc,
                                    "gpu " + std::to_string(index_) + ": " + call + ": " + NvmlErrorName(rc)});
  }

  Observation& Emit(ObsKind kind, Layer layer, const ComponentRef& component, std::optional<double> value,
                    std::string raw) {
    Observation& o = out_.observations.emplace_back();
    o.time_ns = time_ns_;
    o.node = options_.node;
    o.layer = layer;
    o.component = component;
    o.kind = kind;
    o.value = value;
    o.source = Source::kNvml;
    o.raw = std::move(raw);
    return o;
  }

  Observation& EmitGpu(ObsKind kind, double value, std::string raw) {
    return Emit(kind, Layer::kGpu, gpu_, value, std::move(raw));
  }

  void ReadIdentity() {
    GpuIdentity id;
    id.index = static_cast<int>(index_);
    char buf[kNameBufferSize] = {};
    if (api_.get_name && Ok(api_.get_name(device_, buf, sizeof(buf)), "nvmlDeviceGetName")) {
      id.name = FromBuffer(buf, sizeof(buf));
    }
    char uuid[kUuidBufferSize] = {};
    if (api_.get_uuid && Ok(api_.get_uuid(device_, uuid, sizeof(uuid)), "nvmlDeviceGetUUID")) {
      id.uuid = FromBuffer(uuid, sizeof(uuid));
    }
    char serial[kSerialBufferSize] = {};
    if (api_.get_serial && Ok(api_.get_serial(device_, serial, sizeof(serial)), "nvmlDeviceGetSerial")) {
      id.serial = FromBuffer(serial, sizeof(serial));
    }
    NvmlPciInfo pci = {};
    if (api_.get_pci_info && Ok(api_.get_pci_info(device_, &pci), "nvmlDeviceGetPciInfo_v3")) {
      id.bdf = NormalizeBdf(FromBuffer(pci.bus_id, sizeof(pci.bus_id)));
    }
    AttachGpuKeys(id, gpu_);
    if (lost_) return;
    Observation& o = Emit(ObsKind::kGpuIdentity, Layer::kGpu, gpu_, std::nullopt, "");
    for (auto& [key, value] :
         Attrs{{"index", gpu_.name}, {"name", id.name}, {"uuid", id.uuid}, {"serial", id.serial}, {"bdf", id.bdf}}) {
      if (!value.empty()) o.attrs[key] = value;  // unknown keys stay absent
    }
    o.text = id.name;
  }

  void ReadEcc() {
    if (!api_.get_total_ecc_errors) return;
    for (int counter : {kVolatileEcc, kAggregateEcc}) {
      for (int type : {kMemoryErrorCorrected, kMemoryErrorUncorrected}) {
        unsigned long long v = 0;  // NOLINT(runtime/int): ABI type
        if (!Ok(api_.get_total_ecc_errors(device_, type, counter, &v), "nvmlDeviceGetTotalEccErrors")) continue;
        EmitEcc(type, counter, nullptr, v, "nvmlDeviceGetTotalEccErrors");
      }
    }
  }

  void ReadEccLocations() {
    if (!api_.get_memory_error_counter || !options_.per_location_ecc) return;
    for (const auto& loc : kLocations) {
      for (int counter : {kVolatileEcc, kAggregateEcc}) {
        for (int type : {kMemoryErrorCorrected, kMemoryErrorUncorrected}) {
          unsigned long long v = 0;  // NOLINT(runtime/int): ABI type
          if (!Ok(api_.get_memory_error_counter(device_, type, counter, loc.location, &v),
                  "nvmlDeviceGetMemoryErrorCounter")) {
            continue;
          }
          EmitEcc(type, counter, loc.name, v, "nvmlDeviceGetMemoryErrorCounter");
        }
      }
    }
  }

  void EmitEcc(int type, int counter, const char* location, uint64_t v, const char* call) {
    const bool corrected = type == kMemoryErrorCorrected;
    const char* counter_name = counter == kVolatileEcc ? "volatile" : "aggregate";
    std::string raw = std::string(call) + "(" + (corrected ? "corrected" : "uncorrected") + "," + counter_name +
                      (location ? std::string(",") + location : "") + ")=" + std::to_string(v);
    Observation& o = EmitGpu(corrected ? ObsKind::kEccSbe : ObsKind::kEccDbe, static_cast<double>(v), raw);
    o.attrs["counter"] = counter_name;
    if (location) o.attrs["location"] = location;
  }

  void ReadRetiredPages() {
    if (api_.get_retired_pages) {
      for (int cause : {kRetireMultipleSbe, kRetireDbe}) {
        unsigned int pages = 0;
        // A zero-sized query returns the count; INSUFFICIENT_SIZE also carries it.
        NvmlReturn rc = api_.get_retired_pages(device_, cause, &pages, nullptr);
        if (rc == kErrorInsufficientSize) rc = kSuccess;
        if (!Ok(rc, "nvmlDeviceGetRetiredPages")) continue;
        const char* name = cause == kRetireDbe ? "dbe" : "sbe";
        EmitGpu(ObsKind::kRetiredPages, pages,
                std::string("nvmlDeviceGetRetiredPages(") + name + ")=" + std::to_string(pages))
            .attrs["cause"] = name;
      }
    }
    int pending = kFeatureDisabled;
    if (api_.get_retired_pages_pending_status &&
        Ok(api_.get_retired_pages_pending_status(device_, &pending), "nvmlDeviceGetRetiredPagesPendingStatus")) {
      const double v = pending == kFeatureEnabled ? 1 : 0;
      EmitGpu(ObsKind::kRetiredPagesPending, v, "nvmlDeviceGetRetiredPagesPendingStatus=" + std::to_string(pending));
    }
  }

  void ReadRemappedRows() {
    unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
    if (!api_.get_remapped_rows ||
        !Ok(api_.get_remapped_rows(device_, &corr, &unc, &pending, &failure), "nvmlDeviceGetRemappedRows")) {
      return;
    }
    const std::string raw = "nvmlDeviceGetRemappedRows(corr=" + std::to_string(corr) + ",unc=" + std::to_string(unc) +
                            ",pending=" + std::to_string(pending) + ",failure=" + std::to_string(failure) + ")";
    EmitGpu(ObsKind::kRowRemapCorrectable, corr, raw);
    EmitGpu(ObsKind::kRowRemapUncorrectable, unc, raw);
    EmitGpu(ObsKind::kRowRemapPending, pending ? 1 : 0, raw);
    EmitGpu(ObsKind::kRowRemapFailure, failure ? 1 : 0, raw);
  }

  void ReadTemperatures() {
    Attrs thresholds;
    if (api_.get_temperature_threshold) {
      unsigned int t = 0;
      if (Ok(api_.get_temperature_threshold(device_, kThresholdSlowdown, &t), "nvmlDeviceGetTemperatureThreshold")) {
        thresholds["slowdown"] = std::to_string(t);
      }
      if (Ok(api_.get_temperature_threshold(device_, kThresholdShutdown, &t), "nvmlDeviceGetTemperatureThreshold")) {
        thresholds["shutdown"] = std::to_string(t);
      }
    }
    unsigned int gpu_temp = 0;
    if (api_.get_temperature &&
        Ok(api_.get_temperature(device_, kTemperatureGpu, &gpu_temp), "nvmlDeviceGetTemperature")) {
      Observation& o =
          EmitGpu(ObsKind::kTemperature, gpu_temp, "nvmlDeviceGetTemperature(gpu)=" + std::to_string(gpu_temp));
      o.attrs = thresholds;
      o.attrs["sensor"] = "gpu";
    }
    ReadMemoryTemperature();
  }

  void ReadMemoryTemperature() {
    if (!api_.get_field_values) return;
    NvmlFieldValue field = {};
    field.field_id = kFieldMemoryTemp;
    if (!Ok(api_.get_field_values(device_, 1, &field), "nvmlDeviceGetFieldValues")) return;
    if (!Ok(field.nvml_return, "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)")) return;
    std::optional<double> v = FieldAsDouble(field);
    if (!v) return;
    EmitGpu(ObsKind::kTemperature, *v, "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)=" + std::to_string(*v))
        .attrs["sensor"] = "memory";
  }

  static std::optional<double> FieldAsDouble(const NvmlFieldValue& f) {
    switch (f.value_type) {
      case kValueDouble:
        return f.value.d_val;
      case kValueUnsignedInt:
        return f.value.ui_val;
      case kValueUnsignedLong:
        return static_cast<double>(f.value.ul_val);
      case kValueUnsignedLongLong:
        return static_cast<double>(f.value.ull_val);
      case kValueSignedLongLong:
        return static_cast<double>(f.value.sll_val);
      case kValueSignedInt:
        return f.value.si_val;
      case kValueUnsignedShort:
        return f.value.us_val;
      default:
        return std::nullopt;  // a type this build does not know: no guess
    }
  }

  void ReadPower() {
    unsigned int mw = 0;
    if (api_.get_power_usage && Ok(api_.get_power_usage(device_, &mw), "nvmlDeviceGetPowerUsage")) {
      EmitGpu(ObsKind::kPower, mw / 1000.0, "nvmlDeviceGetPowerUsage=" + std::to_string(mw) + "mW");
    }
    if (api_.get_enforced_power_limit &&
        Ok(api_.get_enforced_power_limit(device_, &mw), "nvmlDeviceGetEnforcedPowerLimit")) {
      EmitGpu(ObsKind::kPowerLimit, mw / 1000.0, "nvmlDeviceGetEnforcedPowerLimit=" + std::to_string(mw) + "mW");
    }
  }

  void ReadClocks() {
    if (!api_.get_clock_info) return;
    for (auto [type, name] : {std::pair{kClockSm, "sm"}, std::pair{kClockMem, "mem"}}) {
      unsigned int mhz = 0;
      if (!Ok(api_.get_clock_info(device_, type, &mhz), "nvmlDeviceGetClockInfo")) continue;
      EmitGpu(ObsKind::kClock, mhz, std::string("nvmlDeviceGetClockInfo(") + name + ")=" + std::to_string(mhz))
          .attrs["clock"] = name;
    }
  }

  void ReadClockReasons() {
    // The event-reasons call replaced the throttle-reasons one (same bits); older
    // drivers only have the latter.
    unsigned long long mask = 0;  // NOLINT(runtime/int): ABI type
    bool ok = false;
    if (api_.get_clocks_event_reasons) {
      ok = Ok(api_.get_clocks_event_reasons(device_, &mask), "nvmlDeviceGetCurrentClocksEventReasons");
    } else if (api_.get_clocks_throttle_reasons) {
      ok = Ok(api_.get_clocks_throttle_reasons(device_, &mask), "nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    if (!ok) return;
    EmitGpu(ObsKind::kClockThrottle, static_cast<double>(mask), "clocks_event_reasons=" + Hex(mask)).attrs["mask"] =
        Hex(mask);
  }

  void ReadPcie() {
    unsigned int v = 0;
    if (api_.get_pcie_replay_counter &&
        Ok(api_.get_pcie_replay_counter(device_, &v), "nvmlDeviceGetPcieReplayCounter")) {
      Emit(ObsKind::kPcieReplay, Layer::kFabric, gpu_, v, "nvmlDeviceGetPcieReplayCounter=" + std::to_string(v));
    }
    ReadLinkPair(ObsKind::kPcieLinkGen, api_.get_curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration",
                 api_.get_max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration");
    ReadLinkPair(ObsKind::kPcieLinkWidth, api_.get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth",
                 api_.get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth");
  }

  using UintGetter = NvmlReturn (*)(NvmlDevice, unsigned int*);
  void ReadLinkPair(ObsKind kind, UintGetter curr, const char* curr_call, UintGetter max, const char* max_call) {
    unsigned int cur_v = 0, max_v = 0;
    if (!curr || !Ok(curr(device_, &cur_v), curr_call)) return;
    const bool has_max = max && Ok(max(device_, &max_v), max_call);
    if (lost_) return;
    Observation& o = Emit(kind, Layer::kFabric, gpu_, cur_v, std::string(curr_call) + "=" + std::to_string(cur_v));
    if (has_max) o.attrs["max"] = std::to_string(max_v);
  }

  void ReadNvlinks() {
    if (!api_.get_nvlink_state) return;
    for (int link = 0; link < options_.max_nvlinks && !lost_; ++link) ReadNvlink(static_cast<unsigned>(link));
  }

  void ReadNvlink(unsigned link) {
    int active = kFeatureDisabled;
    const NvmlReturn rc = api_.get_nvlink_state(device_, link, &active);
    // A link number past the GPU's link count answers INVALID_ARGUMENT: not a fault.
    if (rc == kErrorInvalidArgument || !Ok(rc, "nvmlDeviceGetNvLinkState")) return;
    ComponentRef ref = gpu_;
    ref.type = ComponentType::kNvlink;
    ref.name = gpu_.name + "/" + std::to_string(link);
    ref.keys["link"] = std::to_string(link);
    Emit(ObsKind::kNvlinkState, Layer::kFabric, ref, active == kFeatureEnabled ? 1 : 0,
         "nvmlDeviceGetNvLinkState(" + std::to_string(link) + ")=" + std::to_string(active));
    if (!api_.get_nvlink_error_counter) return;
    for (const auto& c : kLinkCounters) {
      unsigned long long v = 0;  // NOLINT(runtime/int): ABI type
      if (!Ok(api_.get_nvlink_error_counter(device_, link, c.counter, &v), "nvmlDeviceGetNvLinkErrorCounter")) {
        continue;
      }
      Emit(c.kind, Layer::kFabric, ref, static_cast<double>(v),
           "nvmlDeviceGetNvLinkErrorCounter(" + std::to_string(link) + "," + c.name + ")=" + std::to_string(v));
    }
  }

  const bool slow_;
  const NvmlApi& api_;
  const NvmlOptions& options_;
  const int64_t time_ns_;
  const unsigned index_;
  const NvmlDevice device_;
  NvmlSample& out_;
  const size_t first_error_;  // this GPU's errors start here in out_.errors
  ComponentRef gpu_;
  bool lost_ = false;
};

}  // namespace

Observation GpuLostObservation(const NvmlOptions& options, int64_t time_ns, const ComponentRef& gpu, NvmlReturn code,
                               const char* call) {
  Observation o;
  o.time_ns = time_ns;
  o.node = options.node;
  o.layer = Layer::kGpu;
  o.component = gpu;
  o.kind = ObsKind::kGpuLost;
  o.value = 1;
  o.source = Source::kNvml;
  o.text = "GPU " + gpu.name + " lost: " + call + " returned " + NvmlErrorName(code);
  o.raw = std::string(call) + "=" + NvmlErrorName(code);
  o.attrs["error"] = NvmlErrorName(code);
  o.attrs["call"] = call;
  return o;
}

void ReadGpu(const NvmlApi& api, const NvmlOptions& options, int64_t time_ns, unsigned index, NvmlDevice device,
             NvmlSample& out, bool slow) {
  GpuReader(api, options, time_ns, index, device, out, slow).Read();
}

}  // namespace faultline::nvml
