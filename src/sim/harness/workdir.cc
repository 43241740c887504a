#include "sim/harness/workdir.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "sim/node/node_scenario.h"

namespace faultline::sim {

namespace fs = std::filesystem;

std::string DefaultScratchParent() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const fs::path tmp = fs::temp_directory_path(ec);
  return ec ? "/tmp" : tmp.string();
}

Result<std::string> MakeUniqueDir(const std::string& parent, const std::string& prefix) {
  if (Status s = CheckScenarioName(prefix); !s.ok()) {
    return Status(StatusCode::kInvalidArgument, "work directory prefix: " + s.message());
  }
  std::string path = (parent.empty() ? std::string(".") : parent) + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    return Status(StatusCode::kIoError, "cannot create a work directory in " + parent + ": " + std::strerror(errno));
  }
  return std::string(buf.data());
}

Result<RunDir> PrepareRunDir(const std::string& requested, const std::string& prefix) {
  if (requested.empty()) {
    auto dir = MakeUniqueDir(DefaultScratchParent(), prefix);
    if (!dir.ok()) return dir.status();
    return RunDir{*dir, true};
  }
  std::error_code ec;
  // create_directory (one level, no parents): an existing path, even a symlink to a
  // directory, is the user's and is never removed.
  if (fs::create_directory(requested, ec)) return RunDir{requested, true};
  if (ec) return Status(StatusCode::kIoError, "--workdir " + requested + ": " + ec.message());
  if (!fs::is_directory(requested, ec)) {
    return Status(StatusCode::kInvalidArgument, "--workdir " + requested + ": exists and is not a directory");
  }
  return RunDir{requested, false};
}

void RemoveIfCreated(const RunDir& dir) {
  if (!dir.created || dir.path.empty()) return;
  std::error_code ec;
  fs::remove_all(dir.path, ec);
}

}  // namespace faultline::sim
