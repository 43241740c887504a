// Helpers for the knowledge-base tests: a temporary kb tree and index folder per test.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace faultline::assistant::kb::testing {

class TempTree {
 public:
  explicit TempTree(const std::string& tag) {
    root_ = std::filesystem::temp_directory_path() /
            ("faultline_kb_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "kb");
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string kb() const { return (root_ / "kb").string(); }
  std::string index() const { return (root_ / "index").string(); }
  std::filesystem::path root() const { return root_; }
  void Write(const std::string& rel, const std::string& content) const {
    const auto p = root_ / "kb" / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  }
  void Remove(const std::string& rel) const { std::filesystem::remove(root_ / "kb" / rel); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path root_;
};

}  // namespace faultline::assistant::kb::testing
