// RootFs keeps O_PATH handles on the directories it reads from (issue 16: resolving each
// device's path again at every poll was half an idle sysfs thread's kernel time). A
// handle must never answer for a path that now names something else: these tests
// change the tree under a RootFs the way hot-unplug, a rescan or the simulator do.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "sources/sysfs/fs.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

class RootFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("faultline_rootfs_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys/devices/pci0000:00/0000:00:01.0");
    fs::create_directories(root_ / "sys/bus/pci/devices");
    fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0",
                                 root_ / "sys/bus/pci/devices/0000:00:01.0");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    const fs::path p = root_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // Writes the new content beside the file and renames it over (the simulator's way).
  void Replace(const std::string& path, const std::string& text) {
    Write(path + ".tmp", text);
    fs::rename(root_ / (path + ".tmp").substr(1), root_ / path.substr(1));
  }

  fs::path root_;
};

constexpr char kAer[] = "/sys/bus/pci/devices/0000:00:01.0/aer_dev_correctable";
constexpr char kDeviceDir[] = "sys/devices/pci0000:00/0000:00:01.0";

TEST_F(RootFsTest, ReadsThroughOneHeldDirectoryAndSeesEachNewContent) {
  RootFs rootfs(root_.string());
  Write(kAer, "RxErr 0\n");
  ASSERT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 0\n");
  Replace(kAer, "RxErr 3\n");
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 3\n");
  Write(kAer, "RxErr 4\n");  // rewritten in place
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 4\n");
  EXPECT_EQ(rootfs.dir_handles(), 1u);
}

TEST_F(RootFsTest, AMissingFileIsNotFoundAndKeepsTheHandle) {
  RootFs rootfs(root_.string());
  Write(kAer, "RxErr 0\n");
  ASSERT_TRUE(rootfs.ReadFile(kAer, 4096).ok());
  auto missing = rootfs.ReadFile("/sys/bus/pci/devices/0000:00:01.0/aer_dev_fatal", 4096);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("aer_dev_fatal"), std::string::npos);
  EXPECT_EQ(rootfs.dir_handles(), 1u);
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 0\n");
}

TEST_F(RootFsTest, ADeviceRemovedIsNotFoundAndOneAddedBackIsReadAnew) {
  RootFs rootfs(root_.string());
  Write(kAer, "RxErr 1\n");
  ASSERT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 1\n");
  fs::remove_all(root_ / kDeviceDir);  // hot-unplug: the device's directory goes
  auto gone = rootfs.ReadFile(kAer, 4096);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  fs::create_directories(root_ / kDeviceDir);  // rescan: a new directory at the same path
  Write(kAer, "RxErr 0\n");
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 0\n");
}

TEST_F(RootFsTest, ALinkPointedAtAnotherDirectoryIsFollowedOnceTheOldOneIsGone) {
  RootFs rootfs(root_.string());
  Write(kAer, "old\n");
  ASSERT_EQ(*rootfs.ReadFile(kAer, 4096), "old\n");
  // The device re-enumerated under another bridge: the bus link moves, the old node goes.
  fs::create_directories(root_ / "sys/devices/pci0000:80/0000:80:01.0");
  std::ofstream(root_ / "sys/devices/pci0000:80/0000:80:01.0/aer_dev_correctable") << "new\n";
  fs::remove(root_ / "sys/bus/pci/devices/0000:00:01.0");
  fs::create_directory_symlink("../../../devices/pci0000:80/0000:80:01.0",
                               root_ / "sys/bus/pci/devices/0000:00:01.0");
  fs::remove_all(root_ / kDeviceDir);
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "new\n");
}

TEST_F(RootFsTest, CopiesShareHandlesAndTheirNumberIsBounded) {
  RootFs rootfs(root_.string());
  const size_t dirs = RootFs::kMaxDirHandles + 5;
  for (size_t i = 0; i < dirs; ++i) Write("/sys/d/" + std::to_string(i) + "/value", std::to_string(i));
  RootFs copy = rootfs;
  for (size_t i = 0; i < dirs; ++i) {
    const std::string path = "/sys/d/" + std::to_string(i) + "/value";
    ASSERT_EQ(*copy.ReadFile(path, 64), std::to_string(i)) << path;
    ASSERT_LE(rootfs.dir_handles(), RootFs::kMaxDirHandles);
  }
  EXPECT_GT(rootfs.dir_handles(), 0u);
}

TEST_F(RootFsTest, OversizedAndUnreadableStillFailClearly) {
  RootFs rootfs(root_.string());
  Write(kAer, std::string(5000, 'x'));
  auto big = rootfs.ReadFile(kAer, 4096);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kCorrupt);
  auto dir_as_file = rootfs.ReadFile("/sys/bus/pci/devices/0000:00:01.0", 4096);
  EXPECT_FALSE(dir_as_file.ok());
  auto under_a_file = rootfs.ReadFile(std::string(kAer) + "/x", 4096);
  EXPECT_FALSE(under_a_file.ok());
}

// A hostile --root (issue 25): a FIFO where an attribute should be hung the reader in
// open(), and links leaving the tree were followed, their content quoted in errors.
class HostileTreeTest : public RootFsTest {
 protected:
  void SetUp() override {
    RootFsTest::SetUp();
    outside_ = root_.string() + "_outside";
    fs::create_directories(outside_);
    std::ofstream(outside_ / "secret") << "SECRET-CONTENT-42\n";
  }
  void TearDown() override {
    fs::remove_all(outside_);
    RootFsTest::TearDown();
  }
  // ReadFile on another thread, given `seconds`; a reader stuck on the FIFO is released
  // (a writer opens and closes it) so that a failing test ends instead of hanging.
  Result<std::string> ReadWithin(const RootFs& rootfs, const std::string& path, const fs::path& fifo, int seconds) {
    auto reading = std::async(std::launch::async, [&] { return rootfs.ReadFile(path, 4096); });
    if (reading.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
      ADD_FAILURE() << path << ": ReadFile blocked on a FIFO";
      const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
    }
    return reading.get();
  }
  fs::path outside_;
};

TEST_F(HostileTreeTest, AFifoIsRefusedWithoutBlocking) {
  const std::string path = "/sys/class/net/eth0/operstate";
  fs::create_directories(root_ / "sys/class/net/eth0");
  const fs::path fifo = root_ / path.substr(1);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RootFs rootfs(root_.string());
  auto r = ReadWithin(rootfs, path, fifo, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
  // Under "/" too (the live tree, where files are opened directly, non-blocking).
  RootFs live("/");
  auto l = ReadWithin(live, fifo.string(), fifo, 5);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kCorrupt);
}

TEST_F(HostileTreeTest, DevicesAndDirectoriesAreNotRead) {
  fs::create_directories(root_ / "sys/class/net/eth0");
  fs::create_symlink("/dev/zero", root_ / "sys/class/net/eth0/speed");
  RootFs rootfs(root_.string());
  auto dev = rootfs.ReadFile("/sys/class/net/eth0/speed", 4096);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), StatusCode::kCorrupt);
  auto live = RootFs("/").ReadFile("/dev/zero", 4096);
  ASSERT_FALSE(live.ok());
  EXPECT_NE(live.status().message().find("not a regular file"), std::string::npos) << live.status().message();
  EXPECT_FALSE(rootfs.ReadFile("/sys/class/net/eth0", 4096).ok());
}

TEST_F(HostileTreeTest, LinksLeavingTheRootAreRefusedWithoutQuotingTheFile) {
  fs::create_directories(root_ / "sys/class/net/eth0");
  fs::create_symlink(outside_ / "secret", root_ / "sys/class/net/eth0/operstate");  // absolute
  fs::create_symlink("../../../../../" + outside_.filename().string() + "/secret",
                     root_ / "sys/class/net/eth0/speed");                 // relative, climbing out
  fs::create_directory_symlink(outside_, root_ / "sys/class/net/evil0");  // a directory link out
  RootFs rootfs(root_.string());
  for (const std::string path :
       {"/sys/class/net/eth0/operstate", "/sys/class/net/eth0/speed", "/sys/class/net/evil0/secret"}) {
    auto r = rootfs.ReadFile(path, 4096);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << path;
    EXPECT_NE(r.status().message().find("outside the root"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("SECRET"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find(outside_.string()), std::string::npos) << r.status().message();
  }
  auto listed = rootfs.ListDir("/sys/class/net/evil0");
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kCorrupt);
  // Links inside the tree are sysfs' normal shape and still work.
  Write(kAer, "RxErr 0\n");
  EXPECT_EQ(*rootfs.ReadFile(kAer, 4096), "RxErr 0\n");
  EXPECT_TRUE(rootfs.ListDir("/sys/bus/pci/devices/0000:00:01.0").ok());
}

}  // namespace
}  // namespace faultline
