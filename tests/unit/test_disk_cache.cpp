// The persistent kernel cache (core/runtime/disk_cache.h, backends/cpu/llvm_jit.cpp): a fresh
// runtime (new LLJIT, empty memory cache) links every kernel from disk; damaged entries and a
// damaged database file are ignored and replaced; SN_CACHE=0 writes nothing; processes compiling
// at once all succeed and lose nothing. Each test uses its own directory through SN_CACHE_DIR.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/opt/search.h"
#include "core/pipeline.h"
#include "core/runtime/disk_cache.h"
#include "core/runtime/runtime.h"
#include "core/schedule/finite.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> getenv_opt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}
void restore_env(const char* name, const std::optional<std::string>& v) {
  if (v)
    setenv(name, v->c_str(), 1);
  else
    unsetenv(name);
}

// A fresh, empty SN_CACHE_DIR for one test (SN_CACHE unset); the environment and the process's
// cache are restored afterwards.
class CacheDir {
 public:
  explicit CacheDir(const std::string& tag) : old_dir_(getenv_opt("SN_CACHE_DIR")), old_on_(getenv_opt("SN_CACHE")) {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / cat("sn_disk_cache_", tag, "_", ::getpid(), "_", counter++);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("SN_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("SN_CACHE");
    reset_disk_cache();
  }
  ~CacheDir() {
    restore_env("SN_CACHE_DIR", old_dir_);
    restore_env("SN_CACHE", old_on_);
    reset_disk_cache();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;
  const fs::path& dir() const { return dir_; }
  fs::path db() const { return dir_ / "cache.db"; }

 private:
  fs::path dir_;
  std::optional<std::string> old_dir_, old_on_;
};

// One run of the test program with a fresh runtime: its outputs as bytes and its CPU device's counts.
struct CacheRun {
  std::vector<std::vector<uint8_t>> outputs;
  ComputeDevice::Stats stats;
  size_t kernels = 0;
  std::vector<std::string> opts;  // each launch's opts, as text
};

// Several different kernels: matmul, softmax (reduces + elementwise), a conv2d, a sum. keep_stages
// makes the pipeline lower every kernel and call compile() (the path that skips find()).
CacheRun compile_and_run_fresh(bool keep_stages = false, int beam = 0, bool context_disk_cache = true) {
  Graph g;
  const UOp* a = input(g, dtypes::float32, {16, 24});
  const UOp* b = input(g, dtypes::float32, {24, 8});
  const UOp* x = input(g, dtypes::float32, {2, 3, 8, 8});
  const UOp* w = input(g, dtypes::float32, {4, 3, 3, 3});
  std::vector<const UOp*> outs = {softmax(g, gemm(g, a, b), 1), conv2d(g, x, w, nullptr, {1, 1}, {1, 1}),
                                  reduce(g, mul(g, a, a), Op::Add, {1})};
  Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
  rt.devices().set_disk_cache(context_disk_cache);
  CompileOptions opts;
  opts.keep_stages = keep_stages;
  opts.beam = beam;
  opts.inputs = {a, b, x, w};
  auto p = compile_program(rt, g, outs, nullptr, opts);
  std::vector<std::shared_ptr<Buffer>> ins, outbufs;
  for (size_t i = 0; i < p->inputs.size(); i++) {
    const TensorSpec& s = p->inputs[i];
    auto buf = Buffer::allocate(p->device, s.dtype, s.shape);
    std::vector<float> v(size_t(buf->numel()));
    for (size_t k = 0; k < v.size(); k++) v[k] = float((k * 37 + i * 11) % 29) / 7.0f - 2.0f;
    buf->copy_in(v.data(), v.size() * sizeof(float));
    ins.push_back(buf);
  }
  for (size_t i = 0; i < p->outputs.size(); i++) outbufs.push_back(p->allocate_output(i));
  p->run(ins, outbufs);
  CacheRun r;
  for (const auto& o : outbufs) {
    std::vector<uint8_t> bytes(o->nbytes());
    o->copy_out(bytes.data(), bytes.size());
    r.outputs.push_back(std::move(bytes));
  }
  r.stats = rt.device("CPU")->stats();
  r.kernels = p->launches.size();
  for (const Launch& l : p->launches) r.opts.push_back(opts_str(l.kernel->opts));
  return r;
}

// Runs SQL on the cache database directly (as another program could).
void sql(const fs::path& db, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

int64_t entries(const fs::path& db, const char* where = "1") {
  sqlite3* h = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    std::string q = cat("SELECT count(*) FROM entries WHERE ", where);
    if (sqlite3_prepare_v2(h, q.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return n;
}

TEST(DiskCache, PathFromEnvironment) {
  auto old_dir = getenv_opt("SN_CACHE_DIR"), old_on = getenv_opt("SN_CACHE"), old_xdg = getenv_opt("XDG_CACHE_HOME"),
       old_home = getenv_opt("HOME");
  setenv("SN_CACHE_DIR", "/tmp/a", 1);
  unsetenv("SN_CACHE");
  EXPECT_EQ(disk_cache_path_from_env(), "/tmp/a/cache.db");
  unsetenv("SN_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(disk_cache_path_from_env(), "/tmp/xdg/sinter/cache.db");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(disk_cache_path_from_env(), "/home/u/.cache/sinter/cache.db");
  setenv("SN_CACHE", "0", 1);
  EXPECT_EQ(disk_cache_path_from_env(), "");
  restore_env("SN_CACHE_DIR", old_dir);
  restore_env("SN_CACHE", old_on);
  restore_env("XDG_CACHE_HOME", old_xdg);
  restore_env("HOME", old_home);
  EXPECT_NE(std::string(disk_cache_version()).find('+'), std::string::npos) << disk_cache_version();
}

TEST(DiskCache, GetPutAndDisabled) {
  CacheDir cd("getput");
  DiskCache c((cd.dir() / "sub" / "x.db").string());
  EXPECT_FALSE(c.get("k").has_value());
  std::string blob("a\0b", 3);
  EXPECT_TRUE(c.put("k", blob));
  EXPECT_EQ(c.get("k"), blob);
  EXPECT_TRUE(c.put("k", "new"));
  EXPECT_EQ(c.get("k"), "new");
  DiskCache off("");
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.put("k", "v"));
  EXPECT_FALSE(off.get("k").has_value());
  DiskCache bad("/proc/no/such/dir/cache.db");  // cannot be created: unavailable, no exception
  EXPECT_FALSE(bad.put("k", "v"));
  EXPECT_FALSE(bad.get("k").has_value());
}

// (a) A second runtime (new device, new LLJIT, empty memory cache) links every kernel from disk:
// no LLVM compile, the same bits out. Both pipeline paths: find() before lowering, and compile().
TEST(DiskCache, SecondRuntimeLinksEveryKernelFromDisk) {
  CacheDir cd("second");
  CacheRun first = compile_and_run_fresh();
  ASSERT_GE(first.kernels, 3u);
  EXPECT_EQ(first.stats.disk_hits, 0u);
  EXPECT_GE(first.stats.compiled, 3u);
  EXPECT_EQ(entries(cd.db()), int64_t(first.stats.compiled));

  CacheRun second = compile_and_run_fresh();
  EXPECT_EQ(second.stats.compiled, 0u) << "every kernel must come from disk";
  EXPECT_EQ(second.stats.disk_hits, first.stats.compiled);
  EXPECT_EQ(second.outputs, first.outputs) << "kernels from disk must compute the same bits";

  CacheRun third = compile_and_run_fresh(/*keep_stages=*/true);
  EXPECT_EQ(third.stats.compiled, 0u);
  EXPECT_EQ(third.stats.disk_hits, first.stats.compiled);
  EXPECT_EQ(third.outputs, first.outputs);
}

// (b) Damaged entries (garbage, truncated, one byte flipped) are recompiled and replaced.
TEST(DiskCache, DamagedEntriesAreRecompiledAndReplaced) {
  const char* damage[] = {
      "UPDATE entries SET value = randomblob(200)",
      "UPDATE entries SET value = substr(value, 1, length(value) / 2)",
      "UPDATE entries SET value = substr(value, 1, 300) || "
      "CASE WHEN substr(value, 301, 1) = X'55' THEN X'AA' ELSE X'55' END || substr(value, 302)",
      "UPDATE entries SET value = X''",
  };
  for (const char* statement : damage) {
    SCOPED_TRACE(statement);
    CacheDir cd("damaged");
    CacheRun first = compile_and_run_fresh();
    reset_disk_cache();  // closes the database (checkpoints the WAL) before another writer comes
    sql(cd.db(), statement);
    reset_disk_cache();
    CacheRun second = compile_and_run_fresh();
    EXPECT_EQ(second.stats.disk_hits, 0u);
    EXPECT_EQ(second.stats.compiled, first.stats.compiled);
    EXPECT_EQ(second.outputs, first.outputs);
    CacheRun third = compile_and_run_fresh();
    EXPECT_EQ(third.stats.compiled, 0u) << "the damaged entries must have been replaced";
    EXPECT_EQ(third.outputs, first.outputs);
  }
}

// (b) A cache.db that is not a database (garbage, or a real one truncated) is replaced by a new one.
TEST(DiskCache, DamagedDatabaseFileIsReplaced) {
  for (int mode = 0; mode < 3; mode++) {
    SCOPED_TRACE(mode);
    CacheDir cd("damaged_db");
    CacheRun reference;
    if (mode == 0) {
      std::ofstream(cd.db(), std::ios::binary) << std::string(5000, 'x') << "not a database";
    } else {
      reference = compile_and_run_fresh();
      reset_disk_cache();  // checkpointed into cache.db, WAL removed
      fs::resize_file(cd.db(), mode == 1 ? 60 : fs::file_size(cd.db()) / 2);
      reset_disk_cache();
    }
    CacheRun first = compile_and_run_fresh();
    EXPECT_EQ(first.stats.disk_hits, 0u);
    EXPECT_GE(first.stats.compiled, 3u);
    if (mode != 0) {
      EXPECT_EQ(first.outputs, reference.outputs);
    }
    CacheRun second = compile_and_run_fresh();
    EXPECT_EQ(second.stats.compiled, 0u) << "the database must have been created again";
    EXPECT_EQ(second.outputs, first.outputs);
  }
}

// A CPU device opens a cache that exists as it starts (beside the JIT's setup), not at its first
// kernel; one not there yet it leaves to the first kernel stored. (SQLite makes the -wal file when
// a connection first reads the database and removes it when the last one closes.)
TEST(DiskCache, ADeviceOpensAnExistingCacheAsItStarts) {
  CacheDir cd("open_early");
  const fs::path wal = cd.db().string() + "-wal";
  {
    Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
    rt.device("CPU");
    EXPECT_TRUE(fs::is_empty(cd.dir())) << "a device must not create the cache before it stores a kernel";
  }
  CacheRun first = compile_and_run_fresh();
  reset_disk_cache();  // closed: checkpointed into cache.db, the WAL removed
  ASSERT_TRUE(fs::exists(cd.db()));
  ASSERT_FALSE(fs::exists(wal));
  Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
  auto dev = rt.device("CPU");
  EXPECT_TRUE(fs::exists(wal)) << "the device must have opened the cache as it started";
  EXPECT_EQ(dev->stats().compiled + dev->stats().disk_hits, 0u);
  CacheRun second = compile_and_run_fresh();
  EXPECT_EQ(second.stats.compiled, 0u);
  EXPECT_EQ(second.outputs, first.outputs);
}

// Whether a constant's values are all finite is kept on disk (core/schedule/finite.h): a compile
// that does not find the program in memory (a second process) reads the answer instead of scanning
// the weights again. An entry that holds no answer is scanned again and replaced; weights with an
// inf are kept as not finite, so their padding products stay in the sum (NaN, as the oracle says).
TEST(DiskCache, FinitenessOfConstantWeightsIsKept) {
  CacheDir cd("finite");
  const int64_t co = 64, ci = 1024;  // 2.25 MiB of weights: over kKeptScanBytes
  static_assert(64 * 1024 * 9 * 4 >= kKeptScanBytes);
  for (bool with_inf : {false, true}) {
    SCOPED_TRACE(with_inf);
    std::vector<float> w(size_t(co * ci * 9));
    for (size_t i = 0; i < w.size(); i++) w[i] = float(int(i * 7 % 31) - 15) / 64;
    if (with_inf) w[123457] = std::numeric_limits<float>::infinity();
    std::string bytes(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
    auto compile = [&](const char* what) {
      SCOPED_TRACE(what);
      Graph g;
      testrt::Rng rng{9};
      const UOp* x = input(g, dtypes::float32, {1, ci, 2, 2});
      oracle::BufferData data{{buffer_of(x), testrt::random_array(rng, dtypes::float32, {ci * 4}, -1, 1)}};
      const UOp* cw = reshape(g, slice(g, binary_data(g, bytes), 0, co * ci * 9, dtypes::float32), {co, ci, 3, 3});
      CompileOptions opts;
      opts.use_cache = false;  // as a new process: schedule, scan and lower again
      testrt::expect_matches_oracle(g, {conv2d(g, x, cw, nullptr, {1, 1}, {1, 1})}, data, "conv", 1e-4, 1e-4, opts);
    };
    const char* where = with_inf ? "key LIKE 'finite/%' AND value = CAST('not finite' AS BLOB)"
                                 : "key LIKE 'finite/%' AND value = CAST('finite' AS BLOB)";
    FiniteStats before = finite_stats();
    compile("first");
    FiniteStats first = finite_stats();
    EXPECT_GE(first.scanned_bytes - before.scanned_bytes, bytes.size());
    EXPECT_EQ(entries(cd.db(), where), 1);
    compile("second");
    FiniteStats second = finite_stats();
    EXPECT_EQ(second.scanned_bytes, first.scanned_bytes) << "the second compile must read the kept answer";
    EXPECT_EQ(second.disk_hits, first.disk_hits + 1);
    sql(cd.db(), "UPDATE entries SET value = CAST('perhaps' AS BLOB) WHERE key LIKE 'finite/%'");
    compile("damaged");
    EXPECT_GE(finite_stats().scanned_bytes - second.scanned_bytes, bytes.size());
    EXPECT_EQ(entries(cd.db(), where), 1) << "the damaged entry must have been replaced";
    sql(cd.db(), "DELETE FROM entries WHERE key LIKE 'finite/%'");
  }
}

// (c) SN_CACHE=0: nothing is written (not even the directory's database).
TEST(DiskCache, OffWritesNothing) {
  CacheDir cd("off");
  setenv("SN_CACHE", "0", 1);
  reset_disk_cache();
  CacheRun first = compile_and_run_fresh();
  CacheRun second = compile_and_run_fresh();
  EXPECT_EQ(second.stats.disk_hits, 0u);
  EXPECT_EQ(second.stats.compiled, first.stats.compiled);
  EXPECT_TRUE(fs::is_empty(cd.dir())) << "SN_CACHE=0 must write nothing into " << cd.dir();
}

// (c) The context's switch (sn_context_set_disk_cache) writes nothing either, for devices opened
// before or after it is turned off.
TEST(DiskCache, ContextSwitchOffWritesNothing) {
  CacheDir cd("context_off");
  CacheRun first = compile_and_run_fresh(false, 0, /*context_disk_cache=*/false);
  EXPECT_GE(first.stats.compiled, 3u);
  EXPECT_TRUE(fs::is_empty(cd.dir())) << "a context with the disk cache off must write nothing into " << cd.dir();
  Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
  Graph g;
  const UOp* x = input(g, dtypes::float32, {64});
  auto dev = rt.device("CPU");  // opened with the cache on, then turned off
  rt.devices().set_disk_cache(false);
  compile_program(rt, g, std::vector<const UOp*>{mul(g, x, x)}, dev);
  EXPECT_TRUE(fs::is_empty(cd.dir()));
  rt.devices().set_disk_cache(true);
  compile_program(rt, g, std::vector<const UOp*>{add(g, x, x)}, dev);
  EXPECT_EQ(entries(cd.db()), 1);
}

// (d) Small kernels compile together into one object file, stored with each of them. A fresh
// runtime that needs only some of them links the object once and finds the others in it; one
// whose object would define an entry point the JIT already has from another compile (the cache
// was off for that one) compiles again under a new name.
TEST(DiskCache, KernelsCompiledTogetherShareTheirObject) {
  CacheDir cd("together");
  Graph g;
  const UOp *x = input(g, dtypes::float32, {64}), *y = input(g, dtypes::float32, {64});
  const UOp *sum_xy = add(g, x, y), *prod_xy = mul(g, x, y), *diff_xy = sub(g, x, y);
  std::vector<float> xv(64), yv(64);
  for (size_t i = 0; i < 64; i++) xv[i] = float(i) * 0.5f - 3.0f, yv[i] = 2.0f - float(i % 7);
  // Compiles `outs` on a device of `rt` and checks every output against `expect` at every element.
  auto run = [&](Runtime& rt, std::vector<const UOp*> outs, std::vector<float (*)(float, float)> expect) {
    CompileOptions o;
    o.inputs = {x, y};
    auto p = compile_program(rt, g, outs, nullptr, o);
    auto bx = Buffer::allocate(p->device, dtypes::float32, p->inputs[0].shape);
    auto by = Buffer::allocate(p->device, dtypes::float32, p->inputs[1].shape);
    bx->copy_in(xv.data(), 64 * sizeof(float));
    by->copy_in(yv.data(), 64 * sizeof(float));
    std::vector<std::shared_ptr<Buffer>> outbufs;
    for (size_t i = 0; i < p->outputs.size(); i++) outbufs.push_back(p->allocate_output(i));
    std::vector<std::shared_ptr<Buffer>> ins{bx, by};
    p->run(ins, outbufs);
    for (size_t i = 0; i < outs.size(); i++) {
      std::vector<float> got(64);
      outbufs[i]->copy_out(got.data(), 64 * sizeof(float));
      for (size_t j = 0; j < 64; j++) ASSERT_EQ(got[j], expect[i](xv[j], yv[j])) << "output " << i << " at " << j;
    }
  };
  auto f_add = +[](float a, float b) { return a + b; };
  auto f_mul = +[](float a, float b) { return a * b; };
  auto f_sub = +[](float a, float b) { return a - b; };
  {
    Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
    run(rt, {sum_xy, prod_xy, diff_xy}, {f_add, f_mul, f_sub});
    EXPECT_EQ(rt.device("CPU")->stats().compiled, 3u);
    EXPECT_EQ(entries(cd.db()), 3);
  }
  {  // one of them: its entry brings the object; the second is found in the object already linked
    Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
    run(rt, {prod_xy}, {f_mul});
    run(rt, {diff_xy}, {f_sub});
    EXPECT_EQ(rt.device("CPU")->stats().compiled, 0u);
    EXPECT_EQ(rt.device("CPU")->stats().disk_hits, 2u);
  }
  {  // the sum compiled with the cache off holds its entry point: the product's object is refused
    Runtime rt(RuntimeOptions{.debug = 0, .threads = 2});
    rt.devices().set_disk_cache(false);
    run(rt, {sum_xy}, {f_add});
    rt.devices().set_disk_cache(true);
    run(rt, {prod_xy}, {f_mul});
    EXPECT_EQ(rt.device("CPU")->stats().compiled, 2u);
    EXPECT_EQ(rt.device("CPU")->stats().disk_hits, 0u);
  }
}

// Outputs as float32 within a relative 1e-4: BEAM may choose other opts when it searches again
// (timings differ), and another reduction order rounds differently.
bool floats_near(const std::vector<std::vector<uint8_t>>& a, const std::vector<std::vector<uint8_t>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i].size() != b[i].size()) return false;
    for (size_t k = 0; k + 4 <= a[i].size(); k += 4) {
      float x, y;
      std::memcpy(&x, a[i].data() + k, 4);
      std::memcpy(&y, b[i].data() + k, 4);
      if (!(std::fabs(x - y) <= 1e-4f * std::max(1.0f, std::fabs(y)))) return false;
    }
  }
  return true;
}

// (e) BEAM results: searched once, then read from disk by a process that has not searched; a
// damaged entry, or a foreign one whose opts do not apply, is searched again and replaced.
TEST(DiskCache, BeamResultsAreKeptAndDamagedOnesSearchedAgain) {
  CacheDir cd("beam");
  const char* beam_rows = "key LIKE 'beam/%'";
  reset_beam_memory();
  BeamStats s0 = beam_stats();
  CacheRun first = compile_and_run_fresh(false, 2);
  BeamStats s1 = beam_stats();
  const uint64_t searched = s1.searches - s0.searches;
  EXPECT_GE(searched, 3u);
  EXPECT_EQ(entries(cd.db(), beam_rows), int64_t(searched));

  reset_beam_memory();
  CacheRun second = compile_and_run_fresh(false, 2);
  BeamStats s2 = beam_stats();
  EXPECT_EQ(s2.searches, s1.searches) << "every result must come from disk";
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + searched);
  EXPECT_EQ(second.opts, first.opts);
  EXPECT_EQ(second.outputs, first.outputs);

  const char* damage[] = {
      "UPDATE entries SET value = randomblob(40) WHERE key LIKE 'beam/%'",
      "UPDATE entries SET value = CAST('sinter-beam-1' || char(10) || 'UPCAST(99,4)' AS BLOB) WHERE key LIKE 'beam/%'",
      "UPDATE entries SET value = CAST('sinter-beam-1' || char(10) || 'UPCAST(0,' AS BLOB) WHERE key LIKE 'beam/%'",
  };
  for (const char* statement : damage) {
    SCOPED_TRACE(statement);
    reset_disk_cache();
    sql(cd.db(), statement);
    reset_disk_cache();
    reset_beam_memory();
    BeamStats before = beam_stats();
    CacheRun again = compile_and_run_fresh(false, 2);
    EXPECT_EQ(beam_stats().searches, before.searches + searched) << "damaged results must be searched again";
    EXPECT_TRUE(floats_near(again.outputs, first.outputs));
    reset_beam_memory();
    BeamStats after_replace = beam_stats();
    compile_and_run_fresh(false, 2);
    EXPECT_EQ(beam_stats().searches, after_replace.searches) << "the damaged results must have been replaced";
  }
}

// (d) Processes compiling the same kernels at once (this test binary again, running only the
// child test below) all succeed; afterwards every kernel is on disk and computes the same bits.
TEST(DiskCache, ProcessesCompilingAtOnce) {
  CacheDir cd("procs");
  CacheRun reference;
  {
    setenv("SN_CACHE", "0", 1);
    reset_disk_cache();
    reference = compile_and_run_fresh();
    unsetenv("SN_CACHE");
    reset_disk_cache();
  }
  ASSERT_TRUE(fs::is_empty(cd.dir()));
  const int kProcs = 3;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; i++) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string out = (cd.dir() / cat("out", i)).string();
      setenv("SN_DISK_CACHE_CHILD_OUT", out.c_str(), 1);
      execl("/proc/self/exe", "sn_unit", "--gtest_filter=DiskCache.ChildCompiles", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  for (int i = 0; i < kProcs; i++) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[size_t(i)], &status, 0), pids[size_t(i)]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i << " status " << status;
    std::ifstream in(cd.dir() / cat("out", i), std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string want;
    for (const auto& o : reference.outputs) want.append(o.begin(), o.end());
    EXPECT_TRUE(got == want) << "child " << i << " computed other bits";
  }
  CacheRun after = compile_and_run_fresh();
  EXPECT_EQ(after.stats.compiled, 0u) << "every kernel must be on disk after the children";
  EXPECT_EQ(after.stats.disk_hits, reference.stats.compiled);
  EXPECT_EQ(after.outputs, reference.outputs);
}

// Runs store(p) in n forked processes that start together (no threads, no gtest in them), and
// returns what each exited with (store's count of failed puts), or -1 when one did not exit.
template <class Store>
std::vector<int> stores_at_once(int n, Store store) {
  std::vector<int> exits(size_t(n), -1);
  int start[2];
  if (pipe(start) != 0) return exits;
  std::vector<pid_t> pids;
  for (int p = 0; p < n; p++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(start[1]);
      char go;
      (void)!read(start[0], &go, 1);  // all start together: the parent closes the pipe
      _exit(store(p));
    }
    pids.push_back(pid);
  }
  close(start[0]);
  close(start[1]);
  for (int p = 0; p < n; p++) {
    int status = 0;
    if (pids[size_t(p)] > 0 && waitpid(pids[size_t(p)], &status, 0) == pids[size_t(p)] && WIFEXITED(status))
      exits[size_t(p)] = WEXITSTATUS(status);
  }
  return exits;
}

// Processes that open a fresh cache at the same moment all keep it: setting up a new database
// takes locks SQLite's busy handler does not wait for, and a process that got SQLITE_BUSY there
// lost its cache for its whole life (its kernels were never stored). 8 processes x 20 fresh
// caches lost some in about one round of four before the setup retried.
TEST(DiskCache, ProcessesOpeningAFreshCacheAtOnceKeepIt) {
  CacheDir cd("fresh_at_once");
  const int kProcs = 8, kRounds = 20, kEntries = 10;
  auto key = [](int p, int k) { return cat("p", p, "_k", k); };
  auto value = [](int p, int k) { return std::string(size_t(1000 + 37 * k), char('a' + (p + k) % 26)); };
  for (int round = 0; round < kRounds; round++) {
    const std::string db = (cd.dir() / cat("round", round) / "cache.db").string();
    std::vector<int> failed = stores_at_once(kProcs, [&](int p) {
      DiskCache c(db);
      int n = 0;
      for (int k = 0; k < kEntries; k++) n += c.put(key(p, k), value(p, k)) ? 0 : 1;
      return n;
    });
    for (int p = 0; p < kProcs; p++)
      EXPECT_EQ(failed[size_t(p)], 0) << "round " << round << ": process " << p << " failed to store entries";
    DiskCache c(db);
    for (int p = 0; p < kProcs; p++)
      for (int k = 0; k < kEntries; k++) EXPECT_EQ(c.get(key(p, k)), value(p, k)) << "round " << round;
  }
}

// The bytes the cache's `totals` row holds and the bytes its values really take.
std::pair<int64_t, int64_t> totals(const fs::path& db) {
  sqlite3* h = nullptr;
  std::pair<int64_t, int64_t> t{-1, -2};
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h,
                           "SELECT (SELECT bytes FROM totals), (SELECT COALESCE(SUM(length(value)), 0) FROM entries)",
                           -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      t = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return t;
}

TEST(DiskCache, LimitsFromEnvironment) {
  auto old = getenv_opt("SN_CACHE_MAX_MB");
  const int64_t fallback = DiskCacheLimits{}.max_bytes;
  EXPECT_EQ(fallback, int64_t(512) << 20);
  unsetenv("SN_CACHE_MAX_MB");
  EXPECT_EQ(disk_cache_limits_from_env().max_bytes, fallback);
  setenv("SN_CACHE_MAX_MB", "64", 1);
  EXPECT_EQ(disk_cache_limits_from_env().max_bytes, int64_t(64) << 20);
  for (const char* bad : {"", "0", "-5", "12abc", "lots", "99999999999999999999"}) {
    setenv("SN_CACHE_MAX_MB", bad, 1);
    EXPECT_EQ(disk_cache_limits_from_env().max_bytes, fallback) << "'" << bad << "'";
  }
  restore_env("SN_CACHE_MAX_MB", old);
}

// Over its limit, the cache removes the least recently used entries down to 3/4 of it; a read
// counts as a use (once per touch interval); the totals row stays exact; a value over a quarter
// of the limit is not stored.
TEST(DiskCache, StaysUnderItsLimitDroppingTheLeastRecentlyUsed) {
  CacheDir cd("limit");
  const fs::path db = cd.dir() / "c.db";
  const int64_t kValue = 10000;
  DiskCache c(db.string(), DiskCacheLimits{.max_bytes = 10 * kValue, .touch_every_s = 3600});
  auto value = [&](int k) { return std::string(size_t(kValue), char('a' + k)); };
  for (int k = 0; k < 10; k++) ASSERT_TRUE(c.put(cat("k", k), value(k)));
  EXPECT_EQ(totals(db), std::make_pair(10 * kValue, 10 * kValue));
  // Ages as another program could set them: k0 the oldest ... k9 the newest, all long ago.
  sql(db, "UPDATE entries SET used = 1000 + CAST(substr(key, 2) AS INTEGER)");
  sql(db, "UPDATE entries SET used = strftime('%s', 'now') - 10 WHERE key = 'k1'");
  EXPECT_EQ(c.get("k0"), value(0));  // used long ago: marked used now
  EXPECT_EQ(c.get("k1"), value(1));  // used 10 s ago, within the touch interval: left as it is
  EXPECT_EQ(entries(db, "key = 'k0' AND used > 1000000"), 1);
  EXPECT_EQ(entries(db, "key = 'k1' AND used < strftime('%s', 'now') - 5"), 1);
  EXPECT_EQ(entries(db, "key = 'k2' AND used = 1002"), 1);

  ASSERT_TRUE(c.put("k10", value(10)));  // 110000 > 100000: trims down to at most 75000
  for (int k : {2, 3, 4, 5}) EXPECT_FALSE(c.get(cat("k", k)).has_value()) << "k" << k << " must be gone";
  for (int k : {0, 1, 6, 7, 8, 9, 10}) EXPECT_EQ(c.get(cat("k", k)), value(k)) << "k" << k;
  EXPECT_EQ(totals(db), std::make_pair(7 * kValue, 7 * kValue));

  EXPECT_FALSE(c.put("huge", std::string(size_t(kValue * 3), 'h'))) << "over a quarter of the limit";
  EXPECT_FALSE(c.get("huge").has_value());
  EXPECT_EQ(totals(db), std::make_pair(7 * kValue, 7 * kValue));

  // A totals row that drifted (edited with the triggers bypassed) is recounted by the next trim,
  // which then removes nothing that fits.
  sql(db, "UPDATE totals SET bytes = 1000000000");
  ASSERT_TRUE(c.put("k11", value(11)));
  EXPECT_EQ(totals(db), std::make_pair(8 * kValue, 8 * kValue));
  for (int k : {0, 1, 6, 7, 8, 9, 10, 11}) EXPECT_EQ(c.get(cat("k", k)), value(k)) << "k" << k;
  // So is a missing one: without it the cache would grow without a limit.
  sql(db, "DELETE FROM totals");
  ASSERT_TRUE(c.put("k12", value(12)));
  EXPECT_EQ(totals(db), std::make_pair(9 * kValue, 9 * kValue));
  // A value stored again under its key counts once, at its new size.
  ASSERT_TRUE(c.put("k0", std::string(100, 'z')));
  EXPECT_EQ(totals(db), std::make_pair(8 * kValue + 100, 8 * kValue + 100));
  EXPECT_EQ(c.get("k0"), std::string(100, 'z'));
}

// Trimmed space goes back to the file system: writing ten times the limit leaves a file near it.
TEST(DiskCache, FileStaysNearItsLimit) {
  CacheDir cd("file_size");
  const fs::path db = cd.dir() / "c.db";
  const int64_t kLimit = 1 << 20;
  {
    DiskCache c(db.string(), DiskCacheLimits{.max_bytes = kLimit});
    for (int k = 0; k < 1000; k++) {
      std::string v(size_t(6000 + k % 5000), char('a' + k % 26));
      ASSERT_TRUE(c.put(cat("key", k), v));
    }
    auto [kept, real] = totals(db);
    EXPECT_EQ(kept, real);
    EXPECT_LE(kept, kLimit);
  }  // closing checkpoints the WAL into the file
  EXPECT_LE(int64_t(fs::file_size(db)), kLimit * 3 / 2) << "the file must stay near its limit";
  {
    DiskCache smaller(db.string(), DiskCacheLimits{.max_bytes = kLimit / 4});
    EXPECT_TRUE(smaller.put("one more", "value"));
    auto [kept, real] = totals(db);
    EXPECT_EQ(kept, real);
    EXPECT_LE(kept, kLimit / 4);
  }
  EXPECT_LE(int64_t(fs::file_size(db)), kLimit / 4 * 3 / 2) << "a lower limit must shrink the file";
}

// The one value of a query on the database (read-only), or -1.
int64_t scalar(const fs::path& db, const char* query) {
  sqlite3* h = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, query, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}

// A cache from before the limit (table `cache`, entries of older builds only) is dropped and the
// file converted to incremental auto_vacuum, its space given back, when a new Sinter opens it. An
// older Sinter that creates `cache` again in the converted file loses it again, and its space.
TEST(DiskCache, CacheOfAnOlderFormatIsDropped) {
  CacheDir cd("legacy");
  const fs::path db = cd.dir() / "c.db";
  const char* old_build_writes =
      "PRAGMA journal_mode=WAL;"
      "CREATE TABLE IF NOT EXISTS cache(key TEXT PRIMARY KEY, value BLOB NOT NULL, stored INTEGER NOT NULL);"
      "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199) "
      "INSERT INTO cache SELECT 'old' || i, randomblob(10000), 0 FROM n;";
  sql(db, old_build_writes);
  EXPECT_GE(fs::file_size(db), 2000000u);  // closing checkpointed the WAL into it
  EXPECT_EQ(scalar(db, "PRAGMA auto_vacuum"), 0);
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE(round);
    {
      DiskCache c(db.string());
      EXPECT_TRUE(c.put(cat("new", round), "value"));
      EXPECT_EQ(c.get(cat("new", round)), "value");
    }
    EXPECT_LE(fs::file_size(db), 200000u);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM sqlite_master WHERE name = 'cache'"), 0);
    EXPECT_EQ(scalar(db, "PRAGMA auto_vacuum"), 2) << "the file must be converted to incremental auto_vacuum";
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM entries"), round + 1);
    sql(db, old_build_writes);  // an older Sinter runs again
    EXPECT_GE(fs::file_size(db), 2000000u);
  }
}

// Processes storing at once into a cache over its limit all succeed, and the cache ends within its
// limit with an exact total (the triggers count in each store's own statement; a trim recounts
// and removes inside one write transaction).
TEST(DiskCache, ProcessesTrimmingAtOnceKeepItConsistent) {
  CacheDir cd("trim_at_once");
  const std::string db = (cd.dir() / "cache.db").string();
  const int kProcs = 4, kEntries = 60;
  const int64_t kLimit = 300000;
  std::vector<int> failed = stores_at_once(kProcs, [&](int p) {
    DiskCache c(db, DiskCacheLimits{.max_bytes = kLimit});
    int n = 0;
    for (int k = 0; k < kEntries; k++)
      n += c.put(cat("p", p, "_k", k), std::string(size_t(5000 + 13 * k), char('a' + p))) ? 0 : 1;
    return n;
  });
  for (int p = 0; p < kProcs; p++) EXPECT_EQ(failed[size_t(p)], 0) << "process " << p << " failed to store entries";
  auto [kept, real] = totals(db);
  EXPECT_EQ(kept, real);
  EXPECT_LE(kept, kLimit);
  EXPECT_GE(kept, kLimit / 2) << "a trim removes down to 3/4 of the limit, not everything";
}

// The child of ProcessesCompilingAtOnce (skipped unless SN_DISK_CACHE_CHILD_OUT is set): compiles
// and runs, and writes its outputs there.
TEST(DiskCache, ChildCompiles) {
  const char* out = std::getenv("SN_DISK_CACHE_CHILD_OUT");
  if (!out) GTEST_SKIP() << "runs as a child of DiskCache.ProcessesCompilingAtOnce";
  reset_disk_cache();
  CacheRun r = compile_and_run_fresh();
  std::ofstream f(out, std::ios::binary);
  for (const auto& o : r.outputs) f.write(reinterpret_cast<const char*>(o.data()), std::streamsize(o.size()));
  ASSERT_TRUE(f.good());
}

}  // namespace
}  // namespace sn
#endif  // SN_BACKEND_CPU
