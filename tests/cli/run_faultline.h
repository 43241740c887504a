// Runs the built faultline binary as an operator would (a subprocess), for the CLI tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace faultline::testing_cli {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` go to the shell as written; stdout is captured, stderr goes to a per-process
// file read back afterwards (ctest runs tests in parallel, each in its own process).
inline RunResult Faultline(const std::string& args, const std::string& stdin_file = "", const std::string& env = "") {
  const std::string err_path = ::testing::TempDir() + "/faultline_stderr." + std::to_string(getpid()) + ".txt";
  std::string cmd =
      env + (env.empty() ? "" : " ") + std::string(FAULTLINE_BINARY_DIR) + "/faultline " + args + " 2>" + err_path;
  if (!stdin_file.empty()) cmd += " < " + stdin_file;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = Slurp(err_path);
  return r;
}

}  // namespace faultline::testing_cli
