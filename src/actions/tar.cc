#include "actions/tar.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace faultline::actions {
namespace {

constexpr size_t kBlock = 512;

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 100 || name.front() == '/') return false;
  if (!std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/';
      })) {
    return false;
  }
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = name.find('/', start);
    const std::string_view part = name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

// An octal field of `width` bytes: digits, then NUL.
void Octal(char* field, size_t width, uint64_t value) {
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  field[width - 1] = '\0';
}

std::string Header(const TarEntry& entry, int64_t mtime_s) {
  std::string h(kBlock, '\0');
  char* b = h.data();
  std::memcpy(b, entry.name.data(), entry.name.size());  // name[100]
  Octal(b + 100, 8, 0644);                               // mode
  Octal(b + 108, 8, 0);                                  // uid
  Octal(b + 116, 8, 0);                                  // gid
  Octal(b + 124, 12, entry.data.size());                 // size
  Octal(b + 136, 12, static_cast<uint64_t>(std::max<int64_t>(0, mtime_s)));
  std::memset(b + 148, ' ', 8);  // checksum is computed with its own field as spaces
  b[156] = '0';                  // regular file
  std::memcpy(b + 257, "ustar", 6);
  std::memcpy(b + 263, "00", 2);
  std::memcpy(b + 265, "root", 4);
  std::memcpy(b + 297, "root", 4);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  Octal(b + 148, 7, sum);  // six digits and NUL, then the space already there
  b[155] = ' ';
  return h;
}

}  // namespace

Result<std::string> MakeTar(const std::vector<TarEntry>& entries, int64_t mtime_s) {
  std::string out;
  for (const TarEntry& e : entries) {
    if (!ValidName(e.name)) return Status(StatusCode::kInvalidArgument, "tar: invalid entry name '" + e.name + "'");
    if (e.data.size() >= (uint64_t{1} << 33)) return Status(StatusCode::kInvalidArgument, "tar: entry too large");
    out += Header(e, mtime_s);
    out += e.data;
    out.append((kBlock - e.data.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

Result<std::string> Gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper instead of zlib's.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status(StatusCode::kInternal, "gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t produced = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Status(StatusCode::kInternal, "gzip: deflate did not finish");
  out.resize(produced);
  return out;
}

Status WriteFileAtomically(const std::string& path, std::string_view data, unsigned mode) {
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return StatusFromErrno(errno, "cannot create a file in " + dir.string());
  auto fail = [&](const std::string& what) {
    const int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return StatusFromErrno(err, what + " " + path);
  };
  if (fchmod(fd, mode) != 0) return fail("cannot set the mode of");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot sync");
  if (close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return StatusFromErrno(err, "cannot close " + path);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return StatusFromErrno(err, "cannot write " + path);
  }
  return Status::Ok();
}

}  // namespace faultline::actions
