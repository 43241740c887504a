// Runs an operator-given command (e.g. "ipmitool sel elist") and returns its stdout.
// The OS touchpoint of the IPMI source, behind an interface so tests use a fake.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace faultline::ipmi {

struct CommandOptions {
  int64_t timeout_ms = 60'000;         // ipmitool over a slow BMC can take tens of seconds
  size_t max_output_bytes = 64 << 20;  // a SEL holds at most a few thousand rows
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // argv[0] is looked up in PATH; no shell is involved. Non-zero exit -> kUnavailable
  // with the first line of stderr; timeout -> kTimeout (the child is killed);
  // output over the limit -> kCorrupt.
  virtual Result<std::string> Run(const std::vector<std::string>& argv, const CommandOptions& options) = 0;
};

// fork/exec with pipes and a poll() deadline.
class ProcessRunner final : public CommandRunner {
 public:
  Result<std::string> Run(const std::vector<std::string>& argv, const CommandOptions& options) override;
};

// Splits a command line on blanks, honouring single and double quotes (no expansion).
// kInvalidArgument for an unterminated quote or an empty command.
Result<std::vector<std::string>> SplitCommandLine(const std::string& line);

}  // namespace faultline::ipmi
