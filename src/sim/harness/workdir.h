// Work directories of simulator runs. The simulator writes ~1000 files per node and
// removes them afterwards, so it only ever removes what it made itself: each run lives
// in a fresh directory created here (mkdtemp: unique, mode 0700, never an existing path),
// and a directory the user named is used as a parent, never deleted.
#pragma once

#include <string>

#include "core/status.h"

namespace faultline::sim {

// Where scratch directories go by default: /dev/shm when writable (a node is many small
// files rewritten every tick), else $TMPDIR or /tmp.
std::string DefaultScratchParent();

// Creates `<parent>/<prefix>-XXXXXX` (unique; parent must exist) and returns its path.
// `prefix` must be a plain file name (CheckScenarioName's rules); kInvalidArgument if not.
Result<std::string> MakeUniqueDir(const std::string& parent, const std::string& prefix);

// A directory a command runs in: --workdir when given (created if absent), else a fresh
// unique one under DefaultScratchParent(). `created` says whether this call made it:
// only then may the command remove it afterwards.
struct RunDir {
  std::string path;
  bool created = false;
};
Result<RunDir> PrepareRunDir(const std::string& requested, const std::string& prefix);

// Removes `dir` and everything under it when `created`; leaves it otherwise.
void RemoveIfCreated(const RunDir& dir);

}  // namespace faultline::sim
