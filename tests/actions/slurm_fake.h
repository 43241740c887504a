// Test double for Slurm's client tools: an in-memory controller that answers the argv the
// Slurm actuator runs (`scontrol show node -o N`, `scontrol update nodename=N state=...
// reason=...`, `sinfo -h -N -o %N|%T|%H|%E`) in the formats slurm-wlm 22.05 prints, and
// refuses anything else, so a test fails when the actuator runs an unexpected command.
#pragma once

#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "sources/ipmi/command_runner.h"

namespace faultline::actions::testing {

class FakeSlurm final : public ipmi::CommandRunner {
 public:
  struct Node {
    std::string state = "IDLE";  // base state; drained adds +DRAIN
    bool drained = false;
    std::string reason;
    std::string reason_time = "2026-12-01T18:50:50";
  };
  std::map<std::string, Node> nodes;
  std::vector<std::vector<std::string>> calls;
  bool controller_down = false;
  int updates = 0;

  Result<std::string> Run(const std::vector<std::string>& argv, const ipmi::CommandOptions&) override {
    calls.push_back(argv);
    if (controller_down) {
      return Status(StatusCode::kUnavailable,
                    argv[0] + " failed: slurm_load_node error: Unable to contact slurm controller (connect failure)");
    }
    if (argv.size() == 5 && argv[0] == "scontrol" && argv[1] == "show" && argv[2] == "node" && argv[3] == "-o") {
      auto it = nodes.find(argv[4]);
      if (it == nodes.end()) return Status(StatusCode::kUnavailable, "scontrol failed: Node " + argv[4] + " not found");
      return ShowLine(it->first, it->second);
    }
    if (argv.size() >= 4 && argv[0] == "scontrol" && argv[1] == "update") return Update(argv);
    if (argv == std::vector<std::string>{"sinfo", "-h", "-N", "-o", "%N|%T|%H|%E"}) return Sinfo();
    return Status(StatusCode::kInvalidArgument, "fake slurm: unexpected command");
  }

 private:
  static std::string ShowLine(const std::string& name, const Node& n) {
    std::string line = "NodeName=" + name + " Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUTot=1 NodeAddr=127.0.0.1 " +
                       "State=" + n.state + (n.drained ? "+DRAIN" : "") +
                       " ThreadsPerCore=1 Partitions=debug  CapWatts=n/a ExtSensorsTemp=n/s";
    if (!n.reason.empty()) line += " Reason=" + n.reason + " [root@" + n.reason_time + "]";
    return line + "\n";
  }
  Result<std::string> Update(const std::vector<std::string>& argv) {
    std::string name, state, reason;
    bool has_reason = false;
    for (size_t i = 2; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.rfind("nodename=", 0) == 0) name = a.substr(9);
      if (a.rfind("state=", 0) == 0) state = a.substr(6);
      if (a.rfind("reason=", 0) == 0) {
        reason = a.substr(7);
        has_reason = true;
      }
    }
    auto it = nodes.find(name);
    if (it == nodes.end()) return Status(StatusCode::kUnavailable, "scontrol failed: Invalid node name specified");
    ++updates;
    if (state == "drain") {
      if (!has_reason) return Status(StatusCode::kUnavailable, "scontrol failed: You must specify a reason");
      it->second.drained = true;
      it->second.reason = reason;
      it->second.reason_time = Now();
    } else if (state == "resume") {
      it->second.drained = false;
      it->second.reason.clear();
    } else {
      return Status(StatusCode::kInvalidArgument, "fake slurm: unexpected state " + state);
    }
    return std::string();
  }
  Result<std::string> Sinfo() {
    std::string out;
    for (const auto& [name, n] : nodes) {
      std::string state = n.drained ? "drained" : "idle";
      out += name + "|" + state + "|" + (n.reason.empty() ? "Unknown" : n.reason_time) + "|" +
             (n.reason.empty() ? "none" : n.reason) + "\n";
    }
    return out;
  }
  static std::string Now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
  }
};

}  // namespace faultline::actions::testing
