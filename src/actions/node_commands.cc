#include "actions/node_commands.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/inventory.h"

namespace faultline::actions {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "GPU-" followed by hex digits and dashes (NVML's UUID form).
bool IsGpuUuid(std::string_view s) {
  if (s.size() < 5 || s.size() > 80 || s.substr(0, 4) != "GPU-") return false;
  return std::all_of(s.begin() + 4, s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '-'; });
}

// One way of naming the GPU, from the component's name or one of its keys.
struct Names {
  std::optional<std::string> bdf, uuid, index;
};

// Adds `value` as what it looks like; false when it contradicts what is already known.
bool AddName(Names& n, const std::string& value, std::string& conflict) {
  auto put = [&](std::optional<std::string>& slot, const std::string& v, const char* what) {
    if (slot && *slot != v) {
      conflict = std::string(what) + " " + *slot + " vs " + v;
      return false;
    }
    slot = v;
    return true;
  };
  if (const std::string bdf = NormalizeBdf(value); !bdf.empty()) return put(n.bdf, bdf, "PCI bus id");
  if (IsGpuUuid(value)) return put(n.uuid, value, "UUID");
  if (AllDigits(value)) return put(n.index, std::to_string(std::stoi(value)), "index");
  return true;  // a name that identifies nothing (a serial, a product name) adds nothing
}

Status WriteMarker(const std::string& dir, const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kIoError, "cannot create " + dir + ": " + ec.message());
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(StatusCode::kIoError, "cannot write " + tmp);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status(StatusCode::kIoError, "cannot write " + path);
  }
  // The rename itself must reach the disk before the reboot does.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> GpuSelector(const ComponentRef& c) {
  if (c.type != ComponentType::kGpu) {
    return Status(StatusCode::kInvalidArgument,
                  "reset_gpu: the diagnosed component " + c.Id() + " is not a GPU; nothing was reset");
  }
  Names names;
  std::string conflict;
  bool consistent = AddName(names, c.name, conflict);
  for (const char* key : {"bdf", "pci_bus_id", "uuid", "index"}) {
    auto it = c.keys.find(key);
    if (consistent && it != c.keys.end()) consistent = AddName(names, it->second, conflict);
  }
  if (!consistent) {
    return Status(StatusCode::kInvalidArgument,
                  "reset_gpu: " + c.Id() + " is ambiguous (" + conflict + "); nothing was reset");
  }
  if (names.bdf) return *names.bdf;
  if (names.uuid) return *names.uuid;
  if (names.index) return *names.index;
  return Status(StatusCode::kInvalidArgument, "reset_gpu: " + c.Id() +
                                                  " names no PCI bus id, UUID or index nvidia-smi could take; "
                                                  "nothing was reset");
}

GpuResetActuator::GpuResetActuator(ipmi::CommandRunner& runner, GpuResetOptions options)
    : runner_(runner), options_(std::move(options)) {}

bool GpuResetActuator::Handles(ActionClass c) const { return c == ActionClass::kResetGpu; }

Result<std::vector<std::string>> GpuResetActuator::CommandFor(const Decision& d) const {
  auto gpu = GpuSelector(d.diagnosis.component);
  if (!gpu.ok()) return gpu.status();
  if (options_.command.empty()) return Status(StatusCode::kInvalidArgument, "reset_gpu: no command configured");
  std::vector<std::string> argv = options_.command;
  bool placed = false;
  for (std::string& arg : argv) {
    if (arg == kGpuPlaceholder) {
      arg = *gpu;
      placed = true;
    }
  }
  if (!placed) argv.push_back(*gpu);
  return argv;
}

Status GpuResetActuator::Apply(const Decision& d) {
  if (!Handles(d.action_class))
    return Status(StatusCode::kUnsupported, "gpu reset cannot " + std::string(ToString(d.action_class)));
  auto argv = CommandFor(d);
  if (!argv.ok()) return argv.status();
  ipmi::CommandOptions o;
  o.timeout_ms = options_.timeout_ms;
  o.max_output_bytes = 1 << 20;
  auto out = runner_.Run(*argv, o);
  if (!out.ok()) return Status(out.status().code(), "reset_gpu: " + (*argv)[0] + ": " + out.status().message());
  return Status::Ok();
}

Result<Observed> GpuResetActuator::Observe(const Decision&) { return Observed::kUnknown; }

Result<std::string> ReadBootId(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kUnavailable, "cannot read the boot id from " + path);
  std::string id;
  std::getline(in, id);
  while (!id.empty() && (id.back() == '\r' || id.back() == ' ')) id.pop_back();
  const bool looks_right = id.size() >= 8 && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
                             return std::isxdigit(static_cast<unsigned char>(c)) || c == '-';
                           });
  if (!looks_right) return Status(StatusCode::kUnavailable, path + " does not hold a boot id");
  return id;
}

RebootActuator::RebootActuator(ipmi::CommandRunner& runner, RebootOptions options)
    : runner_(runner), options_(std::move(options)) {}

bool RebootActuator::Handles(ActionClass c) const { return c == ActionClass::kRebootNode; }

std::string RebootActuator::MarkerPath(const Decision& d) const {
  return (std::filesystem::path(options_.state_dir) / DecisionFileName(d.key, ".reboot")).string();
}

Result<Observed> RebootActuator::Observe(const Decision& d) {
  auto now = ReadBootId(options_.boot_id_path);
  if (!now.ok()) return now.status();
  std::ifstream in(MarkerPath(d));
  if (!in) return Observed::kNotInEffect;
  std::string marked;
  std::getline(in, marked);
  // A marker we cannot read as a boot id was cut short while being written: the command
  // had not run yet (it runs only after the marker is renamed into place).
  if (marked.empty()) return Observed::kNotInEffect;
  return marked != *now ? Observed::kInEffect : Observed::kNotInEffect;
}

Status RebootActuator::Apply(const Decision& d) {
  if (!Handles(d.action_class))
    return Status(StatusCode::kUnsupported, "reboot cannot " + std::string(ToString(d.action_class)));
  if (options_.command.empty()) return Status(StatusCode::kInvalidArgument, "reboot_node: no command configured");
  auto before = Observe(d);
  if (!before.ok()) return before.status();
  if (*before == Observed::kInEffect) return Status::Ok();  // rebooted since: never again
  auto boot = ReadBootId(options_.boot_id_path);
  if (!boot.ok()) return boot.status();
  if (Status s = WriteMarker(options_.state_dir, MarkerPath(d), *boot + "\n"); !s.ok()) {
    return Status(s.code(), "reboot_node: not rebooting, the crash-safety marker failed: " + s.message());
  }
  ipmi::CommandOptions o;
  o.timeout_ms = options_.timeout_ms;
  o.max_output_bytes = 1 << 20;
  auto out = runner_.Run(options_.command, o);
  if (!out.ok())
    return Status(out.status().code(), "reboot_node: " + options_.command[0] + ": " + out.status().message());
  return Status::Ok();
}

Status CheckPersistentDir(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir);
  std::error_code ec;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statfs fs {};
  if (::statfs(p.c_str(), &fs) != 0) return Status::Ok();  // cannot tell: the write will say
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
    return Status(StatusCode::kInvalidArgument,
                  dir + " is on tmpfs/ramfs: reboot markers there would not survive the reboot");
  }
  return Status::Ok();
}

}  // namespace faultline::actions
