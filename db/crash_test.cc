// Crash safety: a writer process killed with SIGKILL in the middle of sample
// ingestion loses nothing it had committed, leaves no partial batch, and
// leaves a database that passes the integrity check.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"
#include "db/test_util.h"
#include "tuner/test_trees.h"

namespace topotune::db {
namespace {

using testing::Must;
using testing::TempDir;

constexpr int kBatchSize = 200;

// Reads exactly one int64 from `fd`; false at end of file.
bool ReadCount(int fd, int64_t* out) {
  char* p = reinterpret_cast<char*>(out);
  size_t got = 0;
  while (got < sizeof(*out)) {
    ssize_t n = read(fd, p + got, sizeof(*out) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// The child: appends batch after batch (batch b has msize b) and, after each
// commit, reports the number of committed batches on `fd`. Never returns.
[[noreturn]] void Ingest(const std::string& path, int64_t run, int fd) {
  StatusOr<Store> store = Store::Open(path);
  if (!store.ok()) _exit(2);
  for (int64_t b = 0;; ++b) {
    std::vector<Sample> batch;
    batch.reserve(kBatchSize);
    for (int i = 0; i < kBatchSize; ++i) batch.push_back({"ring", static_cast<double>(b), 1e-6 * (i + 1)});
    if (!store->AddSamples(run, batch).ok()) _exit(3);
    int64_t committed = b + 1;
    if (write(fd, &committed, sizeof(committed)) != sizeof(committed)) _exit(4);
  }
}

TEST(CrashTest, SigkillDuringIngestLosesNoCommittedBatch) {
  TempDir dir;
  const std::string path = dir.File("crash.db");
  int64_t version = 0;
  {
    // Closed before forking: a child must never use (or inherit the locks of)
    // its parent's SQLite connection.
    Store store = Must(Store::Open(path));
    version = Must(store.PutTopology(topotune::testing::FarajYuanFigure1(), "fig1.yaml"));
  }
  // Several rounds, each killing the writer at a different moment and
  // reopening the database it left behind.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TuningKey key{version, "alltoall", 6, round + 1};
    int64_t run = 0;
    {
      Store store = Must(Store::Open(path));
      run = Must(store.StartRun(key));
    }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Ingest(path, run, fds[1]);
    }
    close(fds[1]);
    // Let some batches through, then kill at a different point of the next
    // batch in each round (a batch takes a few milliseconds here), so that
    // the kill lands while rows are inserted, during a commit, or between.
    const int64_t kill_after = 10 + 7 * round;
    int64_t reported = 0;
    while (reported < kill_after) {
      if (!ReadCount(fds[0], &reported)) break;
    }
    usleep(static_cast<useconds_t>(700 * round));
    kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the writer exited early with status " << WEXITSTATUS(wstatus);
    ASSERT_EQ(WTERMSIG(wstatus), SIGKILL);
    for (int64_t more = 0; ReadCount(fds[0], &more);) reported = more;  // Reports written before the kill.
    close(fds[0]);
    ASSERT_GE(reported, kill_after);

    Store store = Must(Store::Open(path));
    ASSERT_TRUE(store.IntegrityCheck().ok()) << store.IntegrityCheck().ToString();
    std::vector<SampleSet> sets = Must(store.Samples(key));
    // Every reported batch is there; at most one more (committed, killed
    // before reporting); each batch whole.
    ASSERT_GE(static_cast<int64_t>(sets.size()), reported);
    ASSERT_LE(static_cast<int64_t>(sets.size()), reported + 1);
    for (size_t b = 0; b < sets.size(); ++b) {
      EXPECT_EQ(sets[b].msize, static_cast<double>(b));
      EXPECT_EQ(sets[b].seconds.size(), static_cast<size_t>(kBatchSize)) << "batch " << b;
    }
    std::vector<BenchRun> runs = Must(store.ListRuns({.topology_version = version}));
    ASSERT_EQ(runs.back().id, run);
    EXPECT_EQ(runs.back().num_samples, static_cast<int64_t>(sets.size()) * kBatchSize);
  }
}

}  // namespace
}  // namespace topotune::db
