// TuneAllocatorForLongRun: the agent's threads share at most two malloc arenas, so the
// memory one thread frees is not held apart for that thread alone. Checked in a fresh
// process: the setting is process-wide, and this test binary must keep its own.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent.h"

namespace faultline::daemon {
namespace {

// Arenas in use after eight threads allocated while all alive (a thread that exits
// hands its arena to the next one), as the agent's source threads do (malloc_info prints
// one <heap> per arena).
int ArenasAfterEightThreads() {
  std::vector<std::thread> threads;
  std::vector<void*> blocks(8, nullptr);
  std::latch all_allocated(static_cast<std::ptrdiff_t>(blocks.size()));
  for (size_t i = 0; i < blocks.size(); ++i) {
    threads.emplace_back([&blocks, &all_allocated, i] {
      blocks[i] = std::malloc(4096 + i);
      all_allocated.arrive_and_wait();
    });
  }
  for (auto& t : threads) t.join();
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr) return -1;
  malloc_info(0, out);
  std::fclose(out);
  int heaps = 0;
  for (size_t at = std::string(text).find("<heap nr="); at != std::string::npos;
       at = std::string(text).find("<heap nr=", at + 1)) {
    ++heaps;
  }
  std::free(text);
  for (void* b : blocks) std::free(b);
  return heaps;
}

constexpr char kChildMode[] = "FAULTLINE_ALLOCATOR_TEST_CHILD";

// gcc says it with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

// The arenas a fresh process (this test binary re-executed, running only this test)
// ends up with: a forked child would inherit every arena the earlier tests made.
int ArenasInFreshProcess(bool tuned) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv(kChildMode, tuned ? "tuned" : "default", 1);
    execl("/proc/self/exe", "allocator_test_child", "--gtest_filter=AgentAllocator.*", nullptr);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(AgentAllocator, EightThreadsShareAtMostTwoArenas) {
  if (kUnderAsan) GTEST_SKIP() << "ASan replaces malloc: glibc's arenas are not in use";
  if (const char* mode = getenv(kChildMode)) {  // the re-executed child: report and leave
    if (std::string(mode) == "tuned") TuneAllocatorForLongRun();
    _exit(std::min(ArenasAfterEightThreads(), 100));
  }
  const int tuned = ArenasInFreshProcess(true);
  ASSERT_GT(tuned, 0);
  ASSERT_NE(tuned, 127) << "could not re-execute the test binary";
  EXPECT_LE(tuned, 2);
  // Without it glibc gives each new thread an arena of its own (the check means something).
  EXPECT_GT(ArenasInFreshProcess(false), 2);
}

}  // namespace
}  // namespace faultline::daemon
