#include "sources/amdsmi/amd_collector.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/inventory.h"

namespace faultline::amdsmi {
namespace {

// NVML clock event reason bits (docs/gpu-detectors.md) the AMD flags map onto.
constexpr uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kHwThermal = 0x40;

struct BlockName {
  uint64_t bit;
  const char* name;
};
constexpr BlockName kBlocks[] = {
    {kBlockUmc, "umc"},     {kBlockSdma, "sdma"},
    {kBlockGfx, "gfx"},     {kBlockMmhub, "mmhub"},
    {kBlockAthub, "athub"}, {kBlockPcieBif, "pcie_bif"},
    {kBlockHdp, "hdp"},     {kBlockXgmiWafl, "xgmi_wafl"},
    {kBlockDf, "df"},       {kBlockSmn, "smn"},
    {kBlockSem, "sem"},     {kBlockMp0, "mp0"},
    {kBlockMp1, "mp1"},     {kBlockFuse, "fuse"},
    {kBlockMca, "mca"},     {kBlockVcn, "vcn"},
    {kBlockJpeg, "jpeg"},   {kBlockIh, "ih"},
    {kBlockMpio, "mpio"},
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// The HBM (UMC) block, the link (XGMI) block, and everything else on the die: the
// locations the NVIDIA path calls dram / (NVLink) / sram.
bool IsOnChipBlock(const std::string& b) { return b != "umc" && b != "xgmi_wafl"; }

class Emitter {
 public:
  Emitter(const AmdGpuReading& r, int index, const std::string& node, int64_t time_ns, std::vector<Observation>& out)
      : r_(r), node_(node), time_ns_(time_ns), out_(out) {
    gpu_ = GpuComponent(std::to_string(index));
    gpu_.keys["index"] = gpu_.name;
    if (!r.bdf.empty()) gpu_.keys["bdf"] = r.bdf;
    if (!r.uuid.empty()) gpu_.keys["uuid"] = r.uuid;
  }

  void Run() {
    if (r_.lost) return Lost();
    Identity();
    Ecc();
    BadPagesObs();
    Temperatures();
    Power();
    Throttle();
    Xgmi();
    if (r_.pcie_replay) {
      Emit(ObsKind::kPcieReplay, Layer::kFabric, gpu_, static_cast<double>(*r_.pcie_replay),
           Src("pcie_replay_count=", std::to_string(*r_.pcie_replay)));
    }
  }

 private:
  std::string Src(const char* what, const std::string& v) const {
    return std::string(r_.source == Source::kSysfs ? "sysfs " : "amdsmi ") + what + v;
  }

  Observation& Emit(ObsKind kind, Layer layer, const ComponentRef& c, std::optional<double> value, std::string raw) {
    Observation& o = out_.emplace_back();
    o.time_ns = time_ns_;
    o.node = node_;
    o.layer = layer;
    o.component = c;
    o.kind = kind;
    o.value = value;
    o.source = r_.source;
    o.raw = std::move(raw);
    return o;
  }

  void Lost() {
    Observation& o = Emit(ObsKind::kGpuLost, Layer::kGpu, gpu_, 1, r_.lost_call + "=GPU_IS_LOST");
    o.attrs["error"] = "GPU_IS_LOST";
    o.attrs["call"] = r_.lost_call;
    o.attrs["vendor"] = "amd";
    o.text = "GPU " + gpu_.name + (r_.bdf.empty() ? "" : " (" + r_.bdf + ")") + " is gone: it no longer enumerates (" +
             r_.lost_call + ")";
  }

  void Identity() {
    Observation& o = Emit(ObsKind::kGpuIdentity, Layer::kGpu, gpu_, std::nullopt, "");
    o.attrs["index"] = gpu_.name;
    o.attrs["vendor"] = "amd";
    if (!r_.bdf.empty()) o.attrs["bdf"] = r_.bdf;
    if (!r_.uuid.empty()) o.attrs["uuid"] = r_.uuid;
    if (!r_.card.empty()) o.attrs["card"] = r_.card;
  }

  void EccPair(const RasErrCount& c, const char* location, const std::string& what) {
    // Deferred (poison) errors are uncorrectable data the hardware contained: the NVIDIA
    // path's contained-uncorrectable (XID 94) counts them as DBEs too.
    const double ue = static_cast<double>(c.ue + c.de);
    Label(Emit(ObsKind::kEccSbe, Layer::kGpu, gpu_, static_cast<double>(c.ce),
               Src(what.c_str(), " ce=" + std::to_string(c.ce))),
          location);
    Label(Emit(ObsKind::kEccDbe, Layer::kGpu, gpu_, ue,
               Src(what.c_str(), " ue=" + std::to_string(c.ue) + " deferred=" + std::to_string(c.de))),
          location);
  }

  static void Label(Observation& o, const char* location) {
    o.attrs["counter"] = "volatile";  // since driver load, as NVML's volatile counters
    if (location != nullptr) o.attrs["location"] = location;
  }

  void Ecc() {
    RasErrCount dram, sram;
    bool has_dram = false, has_sram = false;
    std::string sram_blocks;
    RasErrCount sum;
    for (const auto& [block, c] : r_.blocks) {
      sum.ce += c.ce;
      sum.ue += c.ue;
      sum.de += c.de;
      if (block == "umc") {
        dram = c;
        has_dram = true;
      } else if (IsOnChipBlock(block)) {
        sram.ce += c.ce;
        sram.ue += c.ue;
        sram.de += c.de;
        has_sram = true;
        if (c.ue + c.de > 0) sram_blocks += (sram_blocks.empty() ? "" : ",") + block;
      }
    }
    const std::optional<RasErrCount> total = r_.total            ? r_.total
                                             : r_.blocks.empty() ? std::nullopt
                                                                 : std::optional(sum);
    if (total) EccPair(*total, nullptr, "total ecc");
    if (has_dram) EccPair(dram, "dram", "umc ecc");
    if (has_sram) {
      EccPair(sram, "sram", "on-chip ecc");
      if (!sram_blocks.empty()) out_.back().attrs["blocks"] = sram_blocks;
    }
  }

  void BadPagesObs() {
    if (!r_.bad_pages) return;
    const BadPages& p = *r_.bad_pages;
    const std::string raw = Src("bad pages", " R=" + std::to_string(p.reserved) + " P=" + std::to_string(p.pending) +
                                                 " F=" + std::to_string(p.unreservable));
    // AMD retires a page for an uncorrectable (or deferred) error: NVML's DBE cause.
    Observation& o = Emit(ObsKind::kRetiredPages, Layer::kGpu, gpu_, static_cast<double>(p.total()), raw);
    o.attrs["cause"] = "dbe";
    if (r_.bad_page_threshold && *r_.bad_page_threshold > 0) o.attrs["limit"] = std::to_string(*r_.bad_page_threshold);
    Emit(ObsKind::kRetiredPagesPending, Layer::kGpu, gpu_, p.pending > 0 ? 1 : 0, raw);
    // F: a bad page that could not be reserved, the remap-failure analog (B7).
    Emit(ObsKind::kRowRemapFailure, Layer::kGpu, gpu_, p.unreservable > 0 ? 1 : 0, raw);
  }

  void Temperatures() {
    for (const auto& [name, t] : r_.temps) {
      // The junction (hotspot) is what the firmware throttles on: the NVIDIA "gpu" sensor.
      const std::string sensor = name == "hotspot" ? "gpu" : name;
      Observation& o = Emit(ObsKind::kTemperature, Layer::kGpu, gpu_, t.c, Src("temperature ", name + "=" + Num(t.c)));
      o.attrs["sensor"] = sensor;
      if (sensor != name) o.attrs["amd_sensor"] = name;
      if (t.critical) o.attrs["slowdown"] = Num(*t.critical);
      if (t.emergency) o.attrs["shutdown"] = Num(*t.emergency);
    }
  }

  void Power() {
    if (r_.power_w) Emit(ObsKind::kPower, Layer::kGpu, gpu_, *r_.power_w, Src("socket power W=", Num(*r_.power_w)));
    if (r_.power_limit_w) {
      Emit(ObsKind::kPowerLimit, Layer::kGpu, gpu_, *r_.power_limit_w, Src("power limit W=", Num(*r_.power_limit_w)));
    }
  }

  void Throttle() {
    if (!r_.throttle_mask) return;
    Observation& o = Emit(ObsKind::kClockThrottle, Layer::kGpu, gpu_, static_cast<double>(*r_.throttle_mask),
                          Src("violation status ", r_.throttle_detail.empty() ? "none" : r_.throttle_detail));
    o.attrs["mask"] = Hex(*r_.throttle_mask);
    if (!r_.throttle_detail.empty()) o.attrs["amd_reasons"] = r_.throttle_detail;
  }

  void Xgmi() {
    // XGMI is the NVLink-class GPU-to-GPU link: its RAS block's correctable errors are
    // link CRC errors, its uncorrectable ones a link failure the hardware recovered
    // from (NVLink "recovery"), counted over all the GPU's links (scope total).
    auto it = r_.blocks.find("xgmi_wafl");
    if (it != r_.blocks.end()) {
      for (auto [kind, v] : {std::pair{ObsKind::kNvlinkCrcData, it->second.ce},
                             std::pair{ObsKind::kNvlinkRecovery, it->second.ue + it->second.de}}) {
        Observation& o = Emit(
            kind, Layer::kFabric, gpu_, static_cast<double>(v),
            Src("xgmi_wafl ", kind == ObsKind::kNvlinkCrcData ? "ce=" + std::to_string(v) : "ue=" + std::to_string(v)));
        o.attrs["scope"] = "total";
        o.attrs["link_type"] = "xgmi";
      }
    }
    if (r_.xgmi_status) {
      Observation& o = Emit(ObsKind::kOther, Layer::kFabric, gpu_, *r_.xgmi_status,
                            Src("xgmi error status=", std::to_string(*r_.xgmi_status)));
      o.attrs["metric"] = "xgmi_error_status";
    }
  }

  const AmdGpuReading& r_;
  const std::string& node_;
  const int64_t time_ns_;
  std::vector<Observation>& out_;
  ComponentRef gpu_;
};

// Calls of one GPU through the table; records errors once per call and code.
class SmiGpu {
 public:
  SmiGpu(const AmdsmiApi& api, Handle h, int position, std::vector<AmdError>& errors)
      : api_(api), h_(h), position_(position), errors_(errors), first_(errors.size()) {}

  AmdGpuReading Read() {
    AmdGpuReading r;
    r.source = Source::kAmdSmi;
    Identity(r);
    Ecc(r);
    BadPagesInfo(r);
    Temps(r);
    PowerInfo(r);
    Violations(r);
    uint32_t xgmi = 0;
    if (api_.get_xgmi_error_status && Ok(api_.get_xgmi_error_status(h_, &xgmi), "amdsmi_gpu_xgmi_error_status")) {
      r.xgmi_status = std::min<uint32_t>(xgmi, 2);
    }
    uint64_t replay = 0;
    if (api_.get_pci_replay_counter &&
        Ok(api_.get_pci_replay_counter(h_, &replay), "amdsmi_get_gpu_pci_replay_counter")) {
      r.pcie_replay = replay;
    }
    return r;
  }

 private:
  bool Ok(AmdsmiStatus rc, const char* call) {
    if (rc == kSuccess) return true;
    if (rc == kNotSupported || rc == kNotYetImplemented) return false;  // the signal is absent
    for (size_t i = first_; i < errors_.size(); ++i) {
      if (errors_[i].call == call && errors_[i].message.find(AmdsmiStatusName(rc)) != std::string::npos) return false;
    }
    errors_.push_back(
        AmdError{position_, call, "gpu " + std::to_string(position_) + ": " + call + ": " + AmdsmiStatusName(rc)});
    return false;
  }

  void Identity(AmdGpuReading& r) {
    AmdsmiBdf bdf;
    if (api_.get_bdf && Ok(api_.get_bdf(h_, &bdf), "amdsmi_get_gpu_device_bdf")) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%04" PRIx64 ":%02x:%02x.%x", bdf.domain() & 0xffff, bdf.bus(), bdf.device(),
                    bdf.function());
      r.bdf = NormalizeBdf(buf);
    }
    char uuid[kUuidBufferSize] = {};
    unsigned int len = sizeof(uuid);
    if (api_.get_uuid && Ok(api_.get_uuid(h_, &len, uuid), "amdsmi_get_gpu_device_uuid")) {
      r.uuid = std::string(uuid, strnlen(uuid, sizeof(uuid)));  // a missing terminator cannot overrun
    }
  }

  void Ecc(AmdGpuReading& r) {
    AmdsmiErrorCount total;
    if (api_.get_total_ecc && Ok(api_.get_total_ecc(h_, &total), "amdsmi_get_gpu_total_ecc_count")) {
      r.total = RasErrCount{total.uncorrectable_count, total.correctable_count, total.deferred_count, true};
    }
    uint64_t enabled = 0;
    if (!api_.get_ecc_enabled || !api_.get_ecc_count ||
        !Ok(api_.get_ecc_enabled(h_, &enabled), "amdsmi_get_gpu_ecc_enabled")) {
      return;
    }
    for (const BlockName& b : kBlocks) {
      if ((enabled & b.bit) == 0) continue;
      AmdsmiErrorCount c;
      if (!Ok(api_.get_ecc_count(h_, b.bit, &c), "amdsmi_get_gpu_ecc_count")) continue;
      r.blocks[b.name] = RasErrCount{c.uncorrectable_count, c.correctable_count, c.deferred_count, true};
    }
  }

  void BadPagesInfo(AmdGpuReading& r) {
    if (!api_.get_bad_page_info) return;
    uint32_t n = 0;
    if (!Ok(api_.get_bad_page_info(h_, &n, nullptr), "amdsmi_get_gpu_bad_page_info")) return;
    BadPages p;
    if (n == 0) {
      r.bad_pages = p;
      return;
    }
    n = std::min(n, kMaxBadPages);  // a hostile count cannot make us allocate without bound
    std::vector<AmdsmiRetiredPageRecord> records(n);
    uint32_t got = n;
    if (!Ok(api_.get_bad_page_info(h_, &got, records.data()), "amdsmi_get_gpu_bad_page_info")) return;
    got = std::min(got, n);
    for (uint32_t i = 0; i < got; ++i) {
      switch (records[i].status) {
        case kPagePending:
          ++p.pending;
          break;
        case kPageUnreservable:
          ++p.unreservable;
          break;
        default:
          ++p.reserved;
          break;
      }
    }
    r.bad_pages = p;
  }

  // AMD SMI answers degrees C in current releases; an older snapshot documents
  // millidegrees: a value above 1000 is read as millidegrees (no GPU runs at 1000 C).
  static double Celsius(int64_t v) {
    return v > 1000 || v < -1000 ? static_cast<double>(v) / 1000.0 : static_cast<double>(v);
  }

  void Temps(AmdGpuReading& r) {
    if (!api_.get_temp_metric) return;
    for (auto [type, name] :
         {std::pair{kTempHotspot, "hotspot"}, std::pair{kTempVram, "memory"}, std::pair{kTempEdge, "edge"}}) {
      int64_t v = 0;
      if (!Ok(api_.get_temp_metric(h_, type, kTempCurrent, &v), "amdsmi_get_temp_metric")) continue;
      AmdGpuReading::Temp t;
      t.c = Celsius(v);
      if (api_.get_temp_metric(h_, type, kTempCritical, &v) == kSuccess && v > 0) t.critical = Celsius(v);
      if (api_.get_temp_metric(h_, type, kTempEmergency, &v) == kSuccess && v > 0) t.emergency = Celsius(v);
      r.temps[name] = t;
    }
  }

  void PowerInfo(AmdGpuReading& r) {
    AmdsmiPowerInfo p;
    if (!api_.get_power_info || !Ok(api_.get_power_info(h_, &p), "amdsmi_get_power_info")) return;
    const uint32_t w = p.current_socket_power != 0 && p.current_socket_power != UINT32_MAX ? p.current_socket_power
                                                                                           : p.average_socket_power;
    if (w != UINT32_MAX) r.power_w = w;
    if (p.power_limit != 0 && p.power_limit != UINT32_MAX) r.power_limit_w = p.power_limit;
  }

  void Violations(AmdGpuReading& r) {
    AmdsmiViolationStatus v;
    if (!api_.get_violation_status || !Ok(api_.get_violation_status(h_, &v), "amdsmi_get_violation_status")) return;
    auto on = [](uint8_t a) { return a != kViolationUnsupported8 && a != 0; };
    const bool socket = on(v.active_socket_thrm), hbm = on(v.active_hbm_thrm), vr = on(v.active_vr_thrm),
               prochot = on(v.active_prochot_thrm), ppt = on(v.active_ppt_pwr);
    r.throttle_mask = ThrottleMaskFor(socket, hbm, vr, prochot, ppt);
    for (auto [flag, name] : {std::pair{socket, "socket_thermal"}, std::pair{hbm, "hbm_thermal"},
                              std::pair{vr, "vr_thermal"}, std::pair{prochot, "prochot"}, std::pair{ppt, "ppt"}}) {
      if (flag) r.throttle_detail += (r.throttle_detail.empty() ? "" : ",") + std::string(name);
    }
  }

  const AmdsmiApi& api_;
  Handle h_;
  int position_;
  std::vector<AmdError>& errors_;
  size_t first_;
};

}  // namespace

uint64_t ThrottleMaskFor(bool socket_thermal, bool hbm_thermal, bool vr_thermal, bool prochot, bool ppt) {
  uint64_t mask = 0;
  // Socket or HBM thermal limit: the firmware slowed the clocks for heat, NVIDIA's
  // HW_THERMAL. A voltage regulator too hot or PROCHOT asserted: a hardware slowdown
  // whose cause the throttle detector judges from temperatures (HW_SLOWDOWN). The
  // package power limit (PPT) is the configured cap, NVIDIA's SW_POWER_CAP: policy.
  if (socket_thermal || hbm_thermal) mask |= kHwThermal | kHwSlowdown;
  if (vr_thermal || prochot) mask |= kHwSlowdown;
  if (ppt) mask |= kSwPowerCap;
  return mask;
}

void EmitAmdReading(const AmdGpuReading& r, int index, const std::string& node, int64_t time_ns,
                    std::vector<Observation>& out) {
  Emitter(r, index, node, time_ns, out).Run();
}

std::vector<AmdGpuReading> ReadAmdsmi(const AmdsmiApi& api, std::vector<AmdError>& errors) {
  std::vector<AmdGpuReading> out;
  uint32_t sockets = 0;
  AmdsmiStatus rc = api.get_socket_handles(&sockets, nullptr);
  if (rc != kSuccess) {
    errors.push_back(AmdError{-1, "amdsmi_get_socket_handles", "amdsmi_get_socket_handles: " + AmdsmiStatusName(rc)});
    return out;
  }
  sockets = std::min(sockets, kMaxSockets);
  std::vector<AmdsmiSocketHandle> socket_handles(sockets);
  if (sockets > 0 && (rc = api.get_socket_handles(&sockets, socket_handles.data())) != kSuccess) {
    errors.push_back(AmdError{-1, "amdsmi_get_socket_handles", "amdsmi_get_socket_handles: " + AmdsmiStatusName(rc)});
    return out;
  }
  sockets = std::min<uint32_t>(sockets, static_cast<uint32_t>(socket_handles.size()));
  int position = 0;
  for (uint32_t s = 0; s < sockets; ++s) {
    uint32_t n = 0;
    rc = api.get_processor_handles(socket_handles[s], &n, nullptr);
    std::vector<AmdsmiProcessorHandle> handles(std::min(n, kMaxProcessorsPerSocket));
    if (rc == kSuccess && !handles.empty()) {
      n = static_cast<uint32_t>(handles.size());
      rc = api.get_processor_handles(socket_handles[s], &n, handles.data());
    }
    if (rc != kSuccess) {
      errors.push_back(
          AmdError{-1, "amdsmi_get_processor_handles",
                   "socket " + std::to_string(s) + ": amdsmi_get_processor_handles: " + AmdsmiStatusName(rc)});
      continue;
    }
    n = std::min<uint32_t>(n, static_cast<uint32_t>(handles.size()));
    for (uint32_t i = 0; i < n; ++i) out.push_back(SmiGpu(api, handles[i], position++, errors).Read());
  }
  return out;
}

std::unique_ptr<AmdCollector> AmdCollector::Open(AmdOptions options) {
  if (!options.use_library) return std::make_unique<AmdCollector>(nullptr, std::move(options));
  auto lib = AmdsmiLibrary::Open(ResolveAmdsmiLibraryPath(options.library_path));
  if (!lib.ok()) {
    auto c = std::make_unique<AmdCollector>(
        nullptr, std::move(options), std::vector<std::string>{lib.status().message() + "; reading sysfs instead"});
    c->library_status_ = lib.status().message();
    return c;
  }
  std::vector<std::string> notes;
  for (const std::string& m : (*lib)->missing_symbols()) {
    notes.push_back(m + " is not exported by this AMD SMI library (older ROCm?): its fields are not collected");
  }
  auto c = std::make_unique<AmdCollector>(&(*lib)->api(), std::move(options), std::move(notes));
  c->library_ = std::move(lib).value();
  return c;
}

AmdCollector::AmdCollector(const AmdsmiApi* api, AmdOptions options, std::vector<std::string> notes)
    : api_(api), options_(std::move(options)), fs_(options_.sysfs_root), pending_notes_(std::move(notes)) {
  if (api_ == nullptr && library_status_.empty()) library_status_ = "AMD SMI not used";
  if (options_.clock == nullptr) {
    own_clock_ = std::make_unique<SystemClock>();
    options_.clock = own_clock_.get();
  }
}

AmdCollector::~AmdCollector() = default;

int AmdCollector::IndexOf(const std::string& bdf) {
  auto it = index_of_.find(bdf);
  if (it != index_of_.end()) return it->second;
  const int next = static_cast<int>(index_of_.size());
  index_of_[bdf] = next;
  return next;
}

AmdSample AmdCollector::Sample() {
  AmdSample sample;
  sample.time_ns = options_.clock->NowNs();
  sample.notes = std::move(pending_notes_);
  pending_notes_.clear();
  std::vector<AmdGpuReading> gpus;
  if (api_ != nullptr) {
    sample.via = "amdsmi";
    gpus = ReadAmdsmi(*api_, sample.errors);
  } else {
    sample.via = "sysfs";
    gpus = ReadAmdgpuSysfs(fs_, sample.errors, sample.notes);
  }
  // The retirement threshold is a driver setting: read it from sysfs on either path.
  if (api_ != nullptr) {
    const std::map<std::string, int64_t> thresholds = ReadAmdgpuBadPageThresholds(fs_);
    for (AmdGpuReading& g : gpus) {
      if (auto it = thresholds.find(g.bdf); it != thresholds.end()) g.bad_page_threshold = it->second;
    }
  }
  // Stable indices: PCI address order at first sight.
  std::stable_sort(gpus.begin(), gpus.end(),
                   [](const AmdGpuReading& a, const AmdGpuReading& b) { return a.bdf < b.bdf; });
  sample.gpu_count = static_cast<int>(gpus.size());
  std::map<std::string, bool> now;
  for (const AmdGpuReading& g : gpus) {
    const std::string key = g.bdf.empty() ? "#" + std::to_string(now.size()) : g.bdf;
    now[key] = true;
    EmitAmdReading(g, IndexOf(key), options_.node, sample.time_ns, sample.observations);
  }
  for (const auto& [bdf, ever] : present_) {
    if (!ever || now.count(bdf)) continue;
    AmdGpuReading gone;
    gone.source = api_ != nullptr ? Source::kAmdSmi : Source::kSysfs;
    gone.bdf = bdf;
    gone.lost = true;
    gone.lost_call = api_ != nullptr ? "amdsmi_get_processor_handles" : "sysfs class/drm";
    EmitAmdReading(gone, IndexOf(bdf), options_.node, sample.time_ns, sample.observations);
  }
  // A GPU once seen and missing now is reported lost at every sample until it is back.
  for (const auto& [bdf, seen] : now) present_[bdf] = seen;
  return sample;
}

}  // namespace faultline::amdsmi
