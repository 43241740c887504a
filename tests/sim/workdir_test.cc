// Work directories: the simulator removes only what it made.
#include "sim/harness/workdir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "sim/fake_sysfs/fake_sysfs.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;

class WorkdirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FakeSysfsScratchDir("workdir");
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(WorkdirTest, UniqueDirectoriesArePrivateAndNeverReused) {
  auto a = MakeUniqueDir(root_, "scenario");
  auto b = MakeUniqueDir(root_, "scenario");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(*a, *b);
  EXPECT_EQ(fs::path(*a).parent_path(), fs::path(root_));
  struct stat st {};
  ASSERT_EQ(::stat(a->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(WorkdirTest, HostilePrefixesAreRefused) {
  for (const std::string& prefix :
       std::vector<std::string>{"../up", "..", "/abs", "a/b", "", std::string("a\0b", 3), std::string(400, 'x')}) {
    auto d = MakeUniqueDir(root_, prefix);
    EXPECT_FALSE(d.ok()) << prefix;
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    }
  }
  EXPECT_TRUE(fs::is_empty(root_));
}

TEST_F(WorkdirTest, AGivenDirectoryThatExistedIsNeverRemoved) {
  std::ofstream(root_ + "/user.txt") << "keep me\n";
  auto d = PrepareRunDir(root_, "x");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->path, root_);
  EXPECT_FALSE(d->created);
  RemoveIfCreated(*d);
  EXPECT_TRUE(fs::exists(root_ + "/user.txt"));
}

TEST_F(WorkdirTest, AGivenDirectoryItMadeIsRemovedAfterwards) {
  auto d = PrepareRunDir(root_ + "/new", "x");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->created);
  std::ofstream(d->path + "/file") << "run output\n";
  RemoveIfCreated(*d);
  EXPECT_FALSE(fs::exists(root_ + "/new"));
  EXPECT_TRUE(fs::exists(root_));
}

TEST_F(WorkdirTest, ASymlinkToTheUsersDirectoryIsTheUsers) {
  fs::create_directories(root_ + "/real");
  std::ofstream(root_ + "/real/user.txt") << "keep me\n";
  fs::create_directory_symlink(root_ + "/real", root_ + "/link");
  auto d = PrepareRunDir(root_ + "/link", "x");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->created);
  RemoveIfCreated(*d);
  EXPECT_TRUE(fs::exists(root_ + "/real/user.txt"));
}

TEST_F(WorkdirTest, BadGivenDirectoriesAreClearErrors) {
  std::ofstream(root_ + "/file") << "not a directory\n";
  auto f = PrepareRunDir(root_ + "/file", "x");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(root_ + "/file"), std::string::npos) << f.status().message();
  auto deep = PrepareRunDir(root_ + "/no/such/parent", "x");  // parents are not made
  ASSERT_FALSE(deep.ok());
  EXPECT_FALSE(fs::exists(root_ + "/no"));
}

TEST_F(WorkdirTest, ADefaultDirectoryIsFreshAndRemovable) {
  auto d = PrepareRunDir("", "faultline-test");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->created);
  EXPECT_EQ(fs::path(d->path).parent_path(), fs::path(DefaultScratchParent()));
  RemoveIfCreated(*d);
  EXPECT_FALSE(fs::exists(d->path));
}

}  // namespace
}  // namespace faultline::sim
