#include "sources/sysfs/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

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

// Open O_PATH handles on directories, by full path. A handle is only a shortcut to a
// name the kernel would resolve anyway: when a file is not found through it, the
// directory's name is resolved again, and a different directory (the old one removed,
// a device re-enumerated) replaces the handle before the one retry.
class RootFs::DirHandles {
 public:
  ~DirHandles() { Clear(); }

  // Opens `full` read-only through its directory's handle; -1 with errno set on failure.
  // One mutex for all of it: the readers of one tree are one source's thread.
  int Open(const std::string& full) {
    const size_t slash = full.rfind('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == full.size()) return OpenByPath(full);
    const std::string dir = full.substr(0, slash);
    const char* name = full.c_str() + slash + 1;
    // Held across the openat: a handle is never closed (or its number reused) under it.
    std::lock_guard<std::mutex> lock(mu_);
    const int dfd = Get(dir);
    if (dfd < 0) return OpenByPath(full);  // the path's own answer, errno included
    const int fd = ::openat(dfd, name, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 || (errno != ENOENT && errno != ENODEV && errno != ESTALE)) return fd;
    const int err = errno;
    if (!Renew(dir, dfd)) {
      errno = err;  // the same directory: the file is not there
      return -1;
    }
    return OpenByPath(full);
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.size();
  }

 private:
  static int OpenByPath(const std::string& full) { return ::open(full.c_str(), O_RDONLY | O_CLOEXEC); }

  int Get(const std::string& dir) {
    if (auto it = fds_.find(dir); it != fds_.end()) return it->second;
    const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fds_.size() >= kMaxDirHandles) Clear();  // a tree far larger than any node's: start over
    fds_.emplace(dir, fd);
    return fd;
  }

  // True when `dir` no longer names the directory `held` is a handle on (or names
  // nothing): the handle is dropped, and the caller resolves the path afresh.
  bool Renew(const std::string& dir, int held) {
    struct stat then{}, now{};
    const int fresh = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    const bool same = fresh >= 0 && ::fstat(held, &then) == 0 && ::fstat(fresh, &now) == 0 &&
                      then.st_dev == now.st_dev && then.st_ino == now.st_ino;
    if (fresh >= 0) ::close(fresh);
    if (same) return false;
    ::close(held);
    fds_.erase(dir);
    return true;
  }

  void Clear() {
    for (const auto& [path, fd] : fds_) ::close(fd);
    fds_.clear();
  }

  mutable std::mutex mu_;
  std::unordered_map<std::string, int> fds_;
};

RootFs::RootFs(std::string root) : root_(std::move(root)), dirs_(std::make_shared<DirHandles>()) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

size_t RootFs::dir_handles() const { return dirs_->size(); }

Result<std::string> RootFs::ReadFile(const std::string& path, size_t max_bytes) const {
  const std::string full = Full(path);
  std::unique_ptr<int, FdCloser> fd(new int(dirs_->Open(full)));
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
    // A short read is the end: a sysfs attribute is produced whole by one show() into a
    // page, and a regular file (a fake tree) reads short only at its end. Saves the read
    // that would return 0, one syscall in four per attribute.
    if (static_cast<size_t>(n) < sizeof(buf)) break;
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
