// The amdgpu sysfs reader (no library): /sys/class/drm/card<N>/device/{ras,hwmon,...}
// (SIGNALS-ethernet-amd.md B1/B2). Each file is read once per sample, bounded, and
// parsed by amdgpu_sysfs_parse; a bad file is an error of that file only.
#include <algorithm>

#include "core/inventory.h"
#include "sources/amdsmi/amd_collector.h"

namespace faultline::amdsmi {
namespace {

constexpr const char* kDrm = "/sys/class/drm";
constexpr const char* kThresholdParam = "/sys/module/amdgpu/parameters/bad_page_threshold";
constexpr int64_t kBytesPerBadPageAllowance = 100LL << 20;  // RAS_BAD_PAGE_COVER: one page per 100 MB

bool IsCard(const std::string& name) {
  if (name.size() < 5 || name.size() > 12 || name.compare(0, 4, "card") != 0) return false;
  return std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsBlockName(std::string_view b) {
  return !b.empty() && b.size() <= 32 && std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// The card<N> entries of class/drm (connectors such as card0-DP-1 and renderD* are not
// cards), at most kMaxAmdCards: a tree with thousands (a hostile --root) would otherwise
// cost a read of each and their observations (4,900 entries took 351 MB).
std::vector<std::string> CardNames(const SysfsFs& fs, std::vector<AmdError>& errors) {
  std::vector<std::string> cards;
  auto names = fs.ListDir(kDrm);
  if (!names.ok()) return cards;
  for (const std::string& name : *names) {
    if (!IsCard(name)) continue;
    if (cards.size() == kMaxAmdCards) {
      errors.push_back(AmdError{-1, "sysfs class/drm",
                                std::string(kDrm) + ": more than " + std::to_string(kMaxAmdCards) +
                                    " card entries; only the first " + std::to_string(kMaxAmdCards) + " were read"});
      break;
    }
    cards.push_back(name);
  }
  return cards;
}

class CardReader {
 public:
  CardReader(const SysfsFs& fs, std::string card, std::vector<AmdError>& errors, std::vector<std::string>& notes)
      : fs_(fs),
        card_(std::move(card)),
        dev_(std::string(kDrm) + "/" + card_ + "/device"),
        errors_(errors),
        notes_(notes) {}

  // Identity and the retirement threshold only: no RAS counter is read (reading them
  // clears hardware registers). False when the card is not an AMD GPU.
  bool ReadThreshold(AmdGpuReading& r) {
    auto vendor = fs_.ReadFile(dev_ + "/vendor", kMaxRasFileBytes);
    if (vendor.ok() && vendor->find("0x1002") == std::string::npos) return false;
    r.bdf = Bdf();
    if (r.bdf.empty()) return false;
    Threshold(r);
    return true;
  }

  // False when the card is not an AMD GPU (or not a PCI device).
  bool Read(AmdGpuReading& r) {
    r.source = Source::kSysfs;
    r.card = card_;
    auto vendor = fs_.ReadFile(dev_ + "/vendor", kMaxRasFileBytes);
    if (vendor.ok() && vendor->find("0x1002") == std::string::npos) return false;
    r.bdf = Bdf();
    if (r.bdf.empty()) return false;
    Ras(r);
    Int(dev_ + "/pcie_replay_count", [&](int64_t v) {
      if (v >= 0) r.pcie_replay = static_cast<uint64_t>(v);
    });
    Threshold(r);
    Hwmon(r);
    return true;
  }

 private:
  std::string Bdf() {
    auto real = fs_.RealPath(dev_);
    if (real.ok()) {
      const std::string bdf = NormalizeBdf(real->substr(real->rfind('/') + 1));
      if (!bdf.empty()) return bdf;
    }
    auto uevent = fs_.ReadFile(dev_ + "/uevent", kMaxRasFileBytes);
    if (!uevent.ok()) return "";
    const size_t p = uevent->find("PCI_SLOT_NAME=");
    if (p == std::string::npos) return "";
    const size_t e = uevent->find('\n', p);
    return NormalizeBdf(uevent->substr(p + 14, e == std::string::npos ? std::string::npos : e - p - 14));
  }

  void Error(const std::string& file, const Status& s) {
    errors_.push_back(AmdError{-1, file, card_ + ": " + file + ": " + s.message()});
  }

  template <typename F>
  void Int(const std::string& path, F&& use) {
    auto text = fs_.ReadFile(path, kMaxRasFileBytes);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) Error(path.substr(path.rfind('/') + 1), text.status());
      return;
    }
    auto v = ParseSysfsInt(*text);
    if (!v.ok()) return Error(path.substr(path.rfind('/') + 1), v.status());
    use(*v);
  }

  void Ras(AmdGpuReading& r) {
    auto entries = fs_.ListDir(dev_ + "/ras");
    if (!entries.ok()) return;  // RAS not enabled on this part/kernel
    for (const std::string& e : *entries) {
      constexpr std::string_view kSuffix = "_err_count";
      if (e.size() <= kSuffix.size() || e.compare(e.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) continue;
      const std::string block = e.substr(0, e.size() - kSuffix.size());
      if (!IsBlockName(block)) continue;
      auto text = fs_.ReadFile(dev_ + "/ras/" + e, kMaxRasFileBytes);
      if (!text.ok()) {
        Error("ras/" + e, text.status());
        continue;
      }
      auto c = ParseRasErrCount(*text);
      if (c.ok()) {
        r.blocks[block] = *c;
      } else if (c.status().code() == StatusCode::kUnavailable) {
        notes_.push_back(card_ + ": ras/" + e + ": " + c.status().message());
      } else {
        Error("ras/" + e, c.status());
      }
    }
    auto pages = fs_.ReadFile(dev_ + "/ras/gpu_vram_bad_pages", kMaxBadPagesBytes);
    if (pages.ok()) {
      auto p = ParseBadPages(*pages);
      if (p.ok()) {
        r.bad_pages = *p;
      } else {
        Error("ras/gpu_vram_bad_pages", p.status());
      }
    } else if (pages.status().code() != StatusCode::kNotFound) {
      Error("ras/gpu_vram_bad_pages", pages.status());
    }
  }

  // bad_page_threshold: > 0 pages; -1 automatic (one page per 100 MB of VRAM); 0 no
  // retirement; -2 threshold ignored. Unknown -> no limit stated.
  void Threshold(AmdGpuReading& r) {
    std::optional<int64_t> param;
    Int(kThresholdParam, [&](int64_t v) { param = v; });
    if (param && *param > 0) {
      r.bad_page_threshold = *param;
    } else if (param && *param == -1) {
      Int(dev_ + "/mem_info_vram_total", [&](int64_t bytes) {
        if (bytes > 0) r.bad_page_threshold = bytes / kBytesPerBadPageAllowance;
      });
    }
  }

  void Hwmon(AmdGpuReading& r) {
    auto dirs = fs_.ListDir(dev_ + "/hwmon");
    if (!dirs.ok() || dirs->empty()) return;
    const std::string h = dev_ + "/hwmon/" + dirs->front();
    for (int i = 1; i <= 3; ++i) {
      const std::string t = h + "/temp" + std::to_string(i);
      auto label = fs_.ReadFile(t + "_label", kMaxRasFileBytes);
      std::string name = label.ok() ? std::string(label->substr(0, label->find('\n'))) : (i == 1 ? "edge" : "");
      if (name == "junction") name = "hotspot";
      if (name == "mem") name = "memory";
      if (name != "edge" && name != "hotspot" && name != "memory") continue;
      std::optional<double> c;
      Int(t + "_input", [&](int64_t v) { c = static_cast<double>(v) / 1000.0; });  // millidegrees
      if (!c) continue;
      AmdGpuReading::Temp temp{*c, std::nullopt, std::nullopt};
      Int(t + "_crit", [&](int64_t v) {
        if (v > 0) temp.critical = static_cast<double>(v) / 1000.0;
      });
      Int(t + "_emergency", [&](int64_t v) {
        if (v > 0) temp.emergency = static_cast<double>(v) / 1000.0;
      });
      r.temps[name] = temp;
    }
    bool have_power = false;
    Int(h + "/power1_input", [&](int64_t uw) { r.power_w = static_cast<double>(uw) / 1e6, have_power = true; });
    if (!have_power) Int(h + "/power1_average", [&](int64_t uw) { r.power_w = static_cast<double>(uw) / 1e6; });
    Int(h + "/power1_cap", [&](int64_t uw) {
      if (uw > 0) r.power_limit_w = static_cast<double>(uw) / 1e6;
    });
  }

  const SysfsFs& fs_;
  std::string card_, dev_;
  std::vector<AmdError>& errors_;
  std::vector<std::string>& notes_;
};

}  // namespace

std::map<std::string, int64_t> ReadAmdgpuBadPageThresholds(const SysfsFs& fs) {
  std::map<std::string, int64_t> out;
  std::vector<AmdError> errors;  // the sysfs path reports them; here only the values matter
  std::vector<std::string> notes;
  for (const std::string& card : CardNames(fs, errors)) {
    AmdGpuReading r;
    if (CardReader(fs, card, errors, notes).ReadThreshold(r) && r.bad_page_threshold)
      out[r.bdf] = *r.bad_page_threshold;
  }
  return out;
}

std::vector<AmdGpuReading> ReadAmdgpuSysfs(const SysfsFs& fs, std::vector<AmdError>& errors,
                                           std::vector<std::string>& notes) {
  std::vector<AmdGpuReading> out;
  for (const std::string& card : CardNames(fs, errors)) {
    AmdGpuReading r;
    if (CardReader(fs, card, errors, notes).Read(r)) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace faultline::amdsmi
