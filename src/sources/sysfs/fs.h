// The filesystem touchpoint of the sysfs source (STYLE.md rule 4). Paths are absolute
// *inside* the root ("/sys/bus/pci/devices"); the real implementation prefixes a root
// directory so tests and the simulator point it at a fake tree, and the fault-injecting
// wrapper lets tests produce permission or I/O errors even when they run as root.
//
// Thread-safety: RootFs is thread-safe (its one mutable part, the directory handles,
// is behind a mutex); FaultInjectingFs is not (tests configure it before use).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline {

class SysfsFs {
 public:
  virtual ~SysfsFs() = default;
  // Whole content of a small regular file. kNotFound (absent), kPermissionDenied, kIoError,
  // or kCorrupt when it is larger than `max_bytes` (sysfs attributes are one page at most),
  // is not a regular file (a FIFO, a device, a directory) or resolves outside the root.
  // Never blocks on the file itself, and a refusal never quotes what the file holds.
  virtual Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const = 0;
  // Entry names of a directory (no "." / ".."), sorted; kCorrupt when it resolves outside
  // the root.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) const = 0;
  // `path` with every symlink resolved, as a path inside the root. kCorrupt when the
  // link leads outside the root.
  virtual Result<std::string> RealPath(const std::string& path) const = 0;
};

// The real filesystem under `root` ("/" on a live node).
//
// Confinement: under any root other than "/" (a copied or simulated tree, possibly
// hostile) a file or directory is used only when its resolved path is inside the root's:
// links within the tree are followed (real sysfs is full of them, class/net/<if> ->
// ../../devices/...), a link that leaves it is refused (kCorrupt). Only regular files are
// read, and under such a root a file is checked through a bare handle (O_PATH) before it
// is opened for reading, so a FIFO never blocks and a device node is never opened. Under
// "/" the tree is the kernel's: files are opened non-blocking and refused unless regular.
//
// ReadFile opens a file relative to a handle (O_PATH) on its directory, kept from one
// read to the next: a collector reads the same few attributes of each device at every
// poll, and resolving /sys/bus/pci/devices/<bdf> (a symlink into the device tree) again
// for each was half the kernel time of an idle agent's sysfs thread. A handle whose
// directory went away (a device removed, a tree rebuilt) answers ENOENT/ENODEV/ESTALE:
// the directory is then looked up again by path and the read retried once, so the
// answer is always the path's as it is now.
class RootFs final : public SysfsFs {
 public:
  explicit RootFs(std::string root);
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<std::string> RealPath(const std::string& path) const override;
  const std::string& root() const { return root_; }
  // Directory handles held (tests; bounded by kMaxDirHandles).
  size_t dir_handles() const;
  static constexpr size_t kMaxDirHandles = 1024;

 private:
  class DirHandles;
  std::string Full(const std::string& path) const { return root_ + path; }
  // A descriptor open for reading on the regular file `path`, checked as described above.
  Result<int> OpenRegular(const std::string& path) const;
  // kCorrupt when `fd` (opened for `path`) is not inside the root; Ok under "/".
  Status CheckInside(int fd, const std::string& path) const;
  std::string root_;  // without trailing slash; "" for "/"
  std::shared_ptr<DirHandles> dirs_;  // shared by copies: same root, same directories
};

// Wraps another SysfsFs: paths given to Fail() return that error; Replace() overrides a
// file's content; every ReadFile path is recorded so tests can check what was read.
class FaultInjectingFs final : public SysfsFs {
 public:
  explicit FaultInjectingFs(const SysfsFs& base) : base_(base) {}
  void Fail(const std::string& path, Status status) { failures_[path] = std::move(status); }
  void Replace(const std::string& path, std::string content) { overrides_[path] = std::move(content); }
  void Clear() {
    failures_.clear();
    overrides_.clear();
  }
  const std::vector<std::string>& reads() const { return reads_; }

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<std::string> RealPath(const std::string& path) const override;

 private:
  const SysfsFs& base_;
  std::map<std::string, Status> failures_;
  std::map<std::string, std::string> overrides_;
  mutable std::vector<std::string> reads_;
};

}  // namespace faultline
