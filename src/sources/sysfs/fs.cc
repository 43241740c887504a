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
#include <utility>

namespace faultline {
namespace {

Status ErrnoStatus(int err, const std::string& what) {
  // sysfs answers these for attributes the device does not implement.
  if (err == EOPNOTSUPP || err == ENODEV || err == ENXIO) {
    return Status(StatusCode::kUnsupported, what + ": " + std::strerror(err));
  }
  return StatusFromErrno(err, what);
}

// An owned descriptor (-1 = none).
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// How a file is opened to be read: never waiting for a writer (a FIFO) and never becoming
// the controlling terminal; only regular files are read after that.
constexpr int kReadFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// What an open descriptor names, every link resolved (the file actually open, so there is
// no window between this check and the read).
Result<std::string> FdPath(int fd) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return StatusFromErrno(errno, link);
  return std::string(buf, static_cast<size_t>(n));
}

bool IsUnder(const std::string& real, const std::string& real_root) {
  if (real_root == "/") return true;
  return real.compare(0, real_root.size(), real_root) == 0 &&
         (real.size() == real_root.size() || real[real_root.size()] == '/');
}

}  // namespace

// Open O_PATH handles on directories, by full path. A handle is only a shortcut to a
// name the kernel would resolve anyway: when a file is not found through it, the
// directory's name is resolved again, and a different directory (the old one removed,
// a device re-enumerated) replaces the handle before the one retry.
class RootFs::DirHandles {
 public:
  ~DirHandles() { Clear(); }

  // Opens `full` with `flags` through its directory's handle; -1 with errno set on failure.
  // One mutex for all of it: the readers of one tree are one source's thread.
  int Open(const std::string& full, int flags) {
    const size_t slash = full.rfind('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == full.size()) return OpenByPath(full, flags);
    const std::string dir = full.substr(0, slash);
    const char* name = full.c_str() + slash + 1;
    // Held across the openat: a handle is never closed (or its number reused) under it.
    std::lock_guard<std::mutex> lock(mu_);
    const int dfd = Get(dir);
    if (dfd < 0) return OpenByPath(full, flags);  // the path's own answer, errno included
    const int fd = ::openat(dfd, name, flags);
    if (fd >= 0 || (errno != ENOENT && errno != ENODEV && errno != ESTALE)) return fd;
    const int err = errno;
    if (!Renew(dir, dfd)) {
      errno = err;  // the same directory: the file is not there
      return -1;
    }
    return OpenByPath(full, flags);
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.size();
  }

  // The root's real path, resolved once ("" while the root cannot be resolved).
  std::string RealRoot(const std::string& root) {
    std::lock_guard<std::mutex> lock(mu_);
    if (real_root_.empty()) {
      char buf[PATH_MAX];
      if (::realpath(root.c_str(), buf) != nullptr) real_root_ = buf;
    }
    return real_root_;
  }

 private:
  static int OpenByPath(const std::string& full, int flags) { return ::open(full.c_str(), flags); }

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
  std::string real_root_;
};

RootFs::RootFs(std::string root) : root_(std::move(root)), dirs_(std::make_shared<DirHandles>()) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

size_t RootFs::dir_handles() const { return dirs_->size(); }

Status RootFs::CheckInside(int fd, const std::string& path) const {
  if (root_.empty()) return Status::Ok();  // "/": the live kernel's tree, everything is in it
  const std::string real_root = dirs_->RealRoot(root_);
  auto real = FdPath(fd);
  if (real_root.empty() || !real.ok()) {
    return Status(StatusCode::kIoError, path + ": cannot tell whether it is inside the root (refused)");
  }
  // Neither the target nor anything read from it is named: the message may reach a report.
  if (!IsUnder(*real, real_root)) return Status(StatusCode::kCorrupt, path + ": resolves outside the root (refused)");
  return Status::Ok();
}

// Under a root other than "/" the file is first opened as a bare handle (O_PATH), which
// opens nothing: a FIFO, a device node or a file outside the root is refused before any
// open() that could block or act on a device. The file checked is then reopened through
// its handle (/proc/self/fd), so what is read is what was checked.
Result<int> RootFs::OpenRegular(const std::string& path) const {
  const bool confined = !root_.empty();
  Fd fd(dirs_->Open(Full(path), confined ? O_PATH | O_CLOEXEC : kReadFlags));
  if (fd.get() < 0) return ErrnoStatus(errno, path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, path);
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kCorrupt, path + ": not a regular file (refused)");
  if (!confined) return fd.release();
  if (Status s = CheckInside(fd.get(), path); !s.ok()) return s;
  const int rd = ::open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), kReadFlags);
  if (rd < 0) return ErrnoStatus(errno, path);
  return rd;
}

Result<std::string> RootFs::ReadFile(const std::string& path, size_t max_bytes) const {
  auto opened = OpenRegular(path);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
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
  const int fd = ::open(Full(path).c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, path);
  if (Status s = CheckInside(fd, path); !s.ok()) {
    ::close(fd);
    return s;
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, path);
  }
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
    return Status(StatusCode::kCorrupt, path + ": resolves outside the root (refused)");
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
