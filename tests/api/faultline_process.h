// The real `faultline` binary as a child process (serve, agent with [server]): its stderr
// and stdout go to a log file, from which the port it bound is read ("(port N)"); stopped
// by SIGTERM at scope exit unless Stop() was called.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace faultline::api_test {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class FaultlineProcess {
 public:
  // `args` after the binary's name, e.g. {"serve", "--store", P, "--listen", "127.0.0.1:0"}.
  // Waits (bounded, 30 s) for the port line; port() is 0 when it never came.
  FaultlineProcess(std::vector<std::string> args, const std::string& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 2);
      dup2(fd, 1);
      args.insert(args.begin(), std::string(FAULTLINE_BINARY_DIR) + "/faultline");
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    const std::regex port_re(R"(\(port (\d+)\))");
    for (int i = 0; i < 3000 && port_ == 0; ++i) {
      std::smatch m;
      const std::string text = Slurp(log_);
      if (std::regex_search(text, m, port_re)) port_ = std::stoi(m[1]);
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  FaultlineProcess(const FaultlineProcess&) = delete;
  FaultlineProcess& operator=(const FaultlineProcess&) = delete;
  ~FaultlineProcess() {
    if (pid_ > 0 && !stopped_) Stop();
  }
  // SIGTERM, then the exit code (-1 when killed by a signal).
  int Stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    stopped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int port() const { return port_; }
  std::string Log() const { return Slurp(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace faultline::api_test
