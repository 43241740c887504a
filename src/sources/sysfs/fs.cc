#include "sources/sysfs/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace faultline {
namespace {

Status ErrnoStatus(int err, const std::string& what) {
  // sysfs answers these for attributes the device does not implement.
  if (err == EOPNOTSUPP || err == ENODEV || err == ENXIO) {
    return Status(StatusCode::kUnsupported, what + ": " + std::strerror(err));
  }
  return StatusFromErrno(err, what);
}

struct FdCloser {
  void operator()(const int* fd) const {
    if (*fd >= 0) ::close(*fd);
    delete fd;
  }
};

}  // namespace

RootFs::RootFs(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

Result<std::string> RootFs::ReadFile(const std::string& path, size_t max_bytes) const {
  const std::string full = Full(path);
  std::unique_ptr<int, FdCloser> fd(new int(::open(full.c_str(), O_RDONLY | O_CLOEXEC)));
  if (*fd < 0) return ErrnoStatus(errno, path);
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(*fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return Status(StatusCode::kCorrupt, path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return out;
}

Result<std::vector<std::string>> RootFs::ListDir(const std::string& path) const {
  const std::string full = Full(path);
  DIR* dir = ::opendir(full.c_str());
  if (dir == nullptr) return ErrnoStatus(errno, path);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> RootFs::RealPath(const std::string& path) const {
  char buf[PATH_MAX];
  if (::realpath(Full(path).c_str(), buf) == nullptr) return ErrnoStatus(errno, path);
  char root_buf[PATH_MAX];
  const std::string root = root_.empty() ? "/" : root_;
  if (::realpath(root.c_str(), root_buf) == nullptr) return ErrnoStatus(errno, "root " + root);
  std::string real = buf, real_root = root_buf;
  if (real_root == "/") return real;
  if (real.compare(0, real_root.size(), real_root) != 0 ||
      (real.size() > real_root.size() && real[real_root.size()] != '/')) {
    return Status(StatusCode::kCorrupt, path + ": resolves outside the root (" + real + ")");
  }
  std::string inside = real.substr(real_root.size());
  return inside.empty() ? std::string("/") : inside;
}

Result<std::string> FaultInjectingFs::ReadFile(const std::string& path, size_t max_bytes) const {
  reads_.push_back(path);
  if (auto it = failures_.find(path); it != failures_.end()) return it->second;
  if (auto it = overrides_.find(path); it != overrides_.end()) {
    if (it->second.size() > max_bytes) {
      return Status(StatusCode::kCorrupt, path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
    return it->second;
  }
  return base_.ReadFile(path, max_bytes);
}

Result<std::vector<std::string>> FaultInjectingFs::ListDir(const std::string& path) const {
  if (auto it = failures_.find(path); it != failures_.end()) return it->second;
  return base_.ListDir(path);
}

Result<std::string> FaultInjectingFs::RealPath(const std::string& path) const {
  if (auto it = failures_.find(path); it != failures_.end()) return it->second;
  return base_.RealPath(path);
}

}  // namespace faultline
