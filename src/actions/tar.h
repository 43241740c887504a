// A small writer for gzip-compressed tar archives (POSIX ustar, regular files only), so an
// evidence bundle is one file any `tar -xzf` opens, with no dependency beyond zlib.
//
// Contract: entry names are fixed by the caller (never taken from data) and must be
// relative, at most 100 bytes of [A-Za-z0-9._-/], without ".." components; anything else is
// kInvalidArgument. Every entry is a regular file, mode 0644, owner 0/0, with `mtime_s`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace faultline::actions {

struct TarEntry {
  std::string name;
  std::string data;
};

// The uncompressed tar stream (512-byte blocks, two zero blocks at the end).
Result<std::string> MakeTar(const std::vector<TarEntry>& entries, int64_t mtime_s);
// gzip (RFC 1952) of `data`.
Result<std::string> Gzip(std::string_view data);

// Writes `data` to `path` through a temporary file in the same directory, fsync and rename,
// so a reader never sees half a file and a failure leaves no partial file behind. Created
// with `mode` (before the umask). kNotFound / kPermissionDenied / kIoError on failure.
Status WriteFileAtomically(const std::string& path, std::string_view data, unsigned mode = 0600);

}  // namespace faultline::actions
