#include "sources/ipmi/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace faultline::ipmi {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void ExecChild(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const char* msg = "exec failed\n";
  (void)!write(STDERR_FILENO, msg, std::strlen(msg));
  _exit(127);
}

// Reads both pipes until EOF, the deadline or the size limit.
Status Drain(int out_fd, int err_fd, const CommandOptions& options, std::string& out, std::string& err) {
  const int64_t deadline = NowMs() + options.timeout_ms;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) return Status(StatusCode::kTimeout, "command timed out");
    int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(StatusCode::kIoError, std::string("poll: ") + std::strerror(errno));
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& dst = i == 0 ? out : err;
      dst.append(buf, static_cast<size_t>(r));
      if (out.size() > options.max_output_bytes) return Status(StatusCode::kCorrupt, "command output too large");
      if (err.size() > 65536) err.resize(65536);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ProcessRunner::Run(const std::vector<std::string>& argv, const CommandOptions& options) {
  if (argv.empty()) return Status(StatusCode::kInvalidArgument, "empty command");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status(StatusCode::kIoError, "pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status(StatusCode::kIoError, "pipe failed");
  }
  pid_t pid = fork();
  if (pid == 0) ExecChild(argv, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return Status(StatusCode::kIoError, "fork failed");
  }
  std::string out, err;
  Status st = Drain(out_pipe[0], err_pipe[0], options, out, err);
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (!st.ok()) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!st.ok()) return st;
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    return Status(StatusCode::kUnavailable, argv[0] + " failed: " + first);
  }
  return out;
}

Result<std::vector<std::string>> SplitCommandLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) return Status(StatusCode::kInvalidArgument, "unterminated quote in command");
  if (in_word) out.push_back(std::move(cur));
  if (out.empty()) return Status(StatusCode::kInvalidArgument, "empty command");
  return out;
}

}  // namespace faultline::ipmi
