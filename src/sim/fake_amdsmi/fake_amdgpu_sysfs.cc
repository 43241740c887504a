#include "sim/fake_amdsmi/fake_amdgpu_sysfs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace faultline::fake_amdsmi {
namespace {

namespace fs = std::filesystem;

Status Write(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Status(StatusCode::kIoError, path.parent_path().string() + ": " + ec.message());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(StatusCode::kIoError, tmp.string() + ": cannot write");
    out << text;
    if (!out.flush()) return Status(StatusCode::kIoError, tmp.string() + ": write failed");
  }
  fs::rename(tmp, path, ec);
  if (ec) return Status(StatusCode::kIoError, path.string() + ": " + ec.message());
  return Status::Ok();
}

// The card's device directory, linked from class/drm/card<N>/device.
Result<fs::path> DeviceDir(const std::string& root, int index, const std::string& bdf) {
  std::error_code ec;
  const fs::path card = fs::path(root) / "sys/class/drm" / ("card" + std::to_string(index));
  const fs::path link = card / "device";
  const fs::path pci = fs::path(root) / "sys/bus/pci/devices" / bdf;
  fs::create_directories(card, ec);
  if (ec) return Status(StatusCode::kIoError, card.string() + ": " + ec.message());
  fs::path target;
  if (fs::exists(pci, ec)) {
    target = fs::path("../../../bus/pci/devices") / bdf;
  } else {
    const fs::path own = fs::path(root) / "sys/devices/amdgpu-fake" / bdf;
    fs::create_directories(own, ec);
    if (ec) return Status(StatusCode::kIoError, own.string() + ": " + ec.message());
    target = fs::path("../../../devices/amdgpu-fake") / bdf;
  }
  if (!fs::is_symlink(link, ec)) {
    fs::create_directory_symlink(target, link, ec);
    if (ec) return Status(StatusCode::kIoError, link.string() + ": " + ec.message());
  }
  return fs::canonical(link, ec);
}

std::string Line(int64_t v) { return std::to_string(v) + "\n"; }

}  // namespace

std::string FakeBadPagesText(uint64_t reserved, uint64_t pending, uint64_t unreservable) {
  std::string out;
  uint64_t pfn = 0x100;
  auto add = [&](uint64_t n, const char* flag) {
    for (uint64_t i = 0; i < n; ++i) {
      char line[48];
      std::snprintf(line, sizeof(line), "0x%08llx : 0x%08x : %s\n", static_cast<unsigned long long>(pfn++), 0x1000,
                    flag);
      out += line;
    }
  };
  add(reserved, "R");
  add(pending, "P");
  add(unreservable, "F");
  return out;
}

Status WriteFakeAmdgpuCard(const std::string& root, int index, const FakeAmdgpuCard& c) {
  auto dir = DeviceDir(root, index, c.bdf);
  if (!dir.ok()) return dir.status();
  const fs::path d = *dir;
  Status first;
  auto w = [&](const fs::path& p, const std::string& text) {
    Status s = Write(p, text);
    if (first.ok() && !s.ok()) first = s;
  };
  w(d / "vendor", "0x1002\n");
  w(d / "device", "0x74a1\n");  // an MI300X device id
  w(d / "uevent", "DRIVER=amdgpu\nPCI_ID=1002:74A1\nPCI_SLOT_NAME=" + c.bdf + "\n");
  w(d / "pcie_replay_count", Line(static_cast<int64_t>(c.pcie_replay)));
  w(d / "mem_info_vram_total", Line(static_cast<int64_t>(c.vram_bytes)));
  if (!c.ras.empty()) {
    w(d / "ras/features", "feature mask: 0x3fbf\n");
    for (const auto& [block, n] : c.ras) {
      w(d / "ras" / (block + "_err_count"), "ue: " + std::to_string(n.ue) + "\nce: " + std::to_string(n.ce) + "\n");
    }
    w(d / "ras/gpu_vram_bad_pages", FakeBadPagesText(c.bad_reserved, c.bad_pending, c.bad_unreservable));
  }
  const fs::path h = d / "hwmon" / ("hwmon" + std::to_string(index + 2));
  w(h / "name", "amdgpu\n");
  w(h / "temp1_label", "edge\n");
  w(h / "temp1_input", Line(c.temp_edge_mc));
  w(h / "temp2_label", "junction\n");
  w(h / "temp2_input", Line(c.temp_junction_mc));
  w(h / "temp2_crit", Line(c.temp_junction_crit_mc));
  w(h / "temp3_label", "mem\n");
  w(h / "temp3_input", Line(c.temp_mem_mc));
  w(h / "temp3_crit", Line(c.temp_mem_crit_mc));
  w(h / "power1_average", Line(c.power_uw));
  w(h / "power1_cap", Line(c.power_cap_uw));
  return first;
}

Status WriteFakeAmdgpuThreshold(const std::string& root, int64_t bad_page_threshold) {
  return Write(fs::path(root) / "sys/module/amdgpu/parameters/bad_page_threshold", Line(bad_page_threshold));
}

}  // namespace faultline::fake_amdsmi
