#include "sources/ethernet/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>

namespace faultline {
namespace {

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// One SIOCETHTOOL call; `cmd` points at the ethtool command struct.
Status Ethtool(const Socket& s, const std::string& interface, void* cmd, const char* what) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, interface.data(), interface.size());  // size checked by the caller (< IFNAMSIZ)
  ifr.ifr_data = static_cast<char*>(cmd);
  if (::ioctl(s.fd(), SIOCETHTOOL, &ifr) == 0) return Status::Ok();
  const int err = errno;
  const std::string msg = interface + ": " + what + ": " + std::strerror(err);
  if (err == ENODEV) return Status(StatusCode::kNotFound, msg);
  if (err == EOPNOTSUPP || err == EINVAL) return Status(StatusCode::kUnsupported, msg);
  return StatusFromErrno(err, msg);
}

// Number of ETH_SS_STATS strings (ETHTOOL_GSSET_INFO: a u32 mask in, one u32 per set out).
Result<uint32_t> StatCount(const Socket& s, const std::string& interface) {
  // The header is followed by one u32 per set asked for (a flexible array): one here.
  alignas(ethtool_sset_info) std::byte buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* info = reinterpret_cast<ethtool_sset_info*>(buf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  if (Status st = Ethtool(s, interface, buf, "ETHTOOL_GSSET_INFO"); !st.ok()) return st;
  if ((info->sset_mask & (1ULL << ETH_SS_STATS)) == 0) {
    return Status(StatusCode::kUnsupported, interface + ": no driver statistics");
  }
  uint32_t n = 0;
  std::memcpy(&n, buf + sizeof(ethtool_sset_info), sizeof(n));
  return n;
}

}  // namespace

Result<std::vector<EthtoolStat>> IoctlEthtoolStats::Read(const std::string& interface) const {
  if (!IsSafeInterfaceName(interface)) return Status(StatusCode::kInvalidArgument, "bad interface name");
  Socket s;
  if (s.fd() < 0) return StatusFromErrno(errno, "socket(AF_INET, SOCK_DGRAM)");
  auto n = StatCount(s, interface);
  if (!n.ok()) return n.status();
  if (*n == 0) return Status(StatusCode::kUnsupported, interface + ": no driver statistics");
  if (*n > kMaxEthtoolStats) return Status(StatusCode::kCorrupt, interface + ": implausible statistics count");
  const size_t count = *n;
  // The kernel writes as many names/values as the driver has *now*, not as many as we ask
  // for: a driver that grew its set between two calls (channels added) would write past a
  // buffer of exactly `count`. Room for twice as many plus 256 makes that practically
  // impossible; answers longer than the room are refused.
  const size_t room = count * 2 + 256;
  std::vector<std::byte> names(sizeof(ethtool_gstrings) + room * ETH_GSTRING_LEN);
  auto* gs = reinterpret_cast<ethtool_gstrings*>(names.data());
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = static_cast<uint32_t>(count);
  if (Status st = Ethtool(s, interface, gs, "ETHTOOL_GSTRINGS"); !st.ok()) return st;
  if (gs->len > room) return Status(StatusCode::kCorrupt, interface + ": statistics names overran the buffer");
  std::vector<std::byte> values(sizeof(ethtool_stats) + room * sizeof(uint64_t));
  auto* st = reinterpret_cast<ethtool_stats*>(values.data());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = static_cast<uint32_t>(count);
  if (Status r = Ethtool(s, interface, st, "ETHTOOL_GSTATS"); !r.ok()) return r;
  if (st->n_stats > room) return Status(StatusCode::kCorrupt, interface + ": statistics values overran the buffer");
  // Names and values must describe the same set; a set that changed between the calls is
  // read again next time rather than paired up wrongly.
  if (st->n_stats != gs->len) return Status(StatusCode::kUnavailable, interface + ": statistics set changed");
  const size_t have = gs->len;  // <= room, == st->n_stats (checked above)
  std::vector<EthtoolStat> out;
  out.reserve(have);
  for (size_t i = 0; i < have; ++i) {
    const char* raw = reinterpret_cast<const char*>(gs->data) + i * ETH_GSTRING_LEN;
    const std::string name(raw, strnlen(raw, ETH_GSTRING_LEN));
    if (!IsPlausibleStatName(name)) continue;
    uint64_t v = 0;
    std::memcpy(&v, reinterpret_cast<const std::byte*>(st->data) + i * sizeof(uint64_t), sizeof(v));
    out.push_back({name, v});
  }
  return out;
}

Result<std::vector<EthtoolStat>> FileEthtoolStats::Read(const std::string& interface) const {
  if (!IsSafeInterfaceName(interface)) return Status(StatusCode::kInvalidArgument, "bad interface name");
  auto text = fs_.ReadFile(PathFor(interface), kMaxEthtoolTextBytes);
  if (!text.ok()) {
    // No statistics file for this interface: as the ioctl says for lo.
    if (text.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kUnsupported, interface + ": no driver statistics");
    }
    return text.status();
  }
  auto stats = ParseEthtoolStatsText(*text);
  if (!stats.ok()) return Status(stats.status().code(), PathFor(interface) + ": " + stats.status().message());
  return stats;
}

}  // namespace faultline
