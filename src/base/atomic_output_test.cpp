#include "base/atomic_output.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

class AtomicOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "kite_atomic_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The names in the folder: a temporary left behind shows up here.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(AtomicOutputTest, CommitReplacesTheTargetAndLeavesNoTemporary) {
  const std::string target = dir_ + "/out.bin";
  Put(target, "old contents");
  ::chmod(target.c_str(), 0640);
  auto out = AtomicOutput::Create(target);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_TRUE(out->temp_path().starts_with(dir_ + "/out.bin.kite-tmp-")) << out->temp_path();
  ASSERT_TRUE(out->Write("hello, ").has_value());
  ASSERT_TRUE(out->Write(Bytes("world")).has_value());
  ASSERT_TRUE(out->WriteAt(0, Bytes("J")).has_value());  // in place; Write's position stays
  ASSERT_TRUE(out->Write("!").has_value());
  EXPECT_EQ(Slurp(target), "old contents");  // nothing visible before Commit
  ASSERT_TRUE(out->Commit().has_value());
  EXPECT_EQ(Slurp(target), "Jello, world!");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.bin"});
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // the replaced file's permissions
  EXPECT_FALSE(out->Write("more").has_value());
}

TEST_F(AtomicOutputTest, WithoutCommitTheTargetStaysAndTheTemporaryGoes) {
  const std::string target = dir_ + "/out.bin";
  Put(target, "previous good file");
  {
    auto out = AtomicOutput::Create(target);
    ASSERT_TRUE(out.has_value()) << out.error().message;
    ASSERT_TRUE(out->Write("half a fi").has_value());
    EXPECT_EQ(Names().size(), 2u);
  }
  EXPECT_EQ(Slurp(target), "previous good file");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.bin"});
  {
    auto fresh = AtomicOutput::Create(dir_ + "/new.bin");
    ASSERT_TRUE(fresh.has_value());
  }
  EXPECT_EQ(Names(), std::vector<std::string>{"out.bin"});  // no empty new.bin either
}

TEST_F(AtomicOutputTest, RefusesASymbolicLinkAndLeavesItAndItsTargetAlone) {
  const std::string real = dir_ + "/real.bin", link = dir_ + "/link.bin";
  Put(real, "real");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto out = AtomicOutput::Create(link);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message.find(link + ": is a symbolic link"), std::string::npos)
      << out.error().message;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Slurp(real), "real");
  EXPECT_EQ(Names(), (std::vector<std::string>{"link.bin", "real.bin"}));
}

TEST_F(AtomicOutputTest, RefusesDevicesFifosAndFoldersByKind) {
  const std::string fifo = dir_ + "/fifo", device = dir_ + "/null", folder = dir_ + "/sub";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_TRUE(fs::create_directory(folder));
  const bool have_device = ::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;  // root
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "a FIFO"}, {folder, "a directory"}, {device, "a character device"}}) {
    if (path == device && !have_device) continue;
    auto out = AtomicOutput::Create(path);
    ASSERT_FALSE(out.has_value()) << path;
    EXPECT_NE(out.error().message.find(path + ": is " + kind), std::string::npos)
        << out.error().message;
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(folder));
  if (have_device) {
    EXPECT_TRUE(fs::is_character_file(device));
  }
  EXPECT_FALSE(AtomicOutput::Create(dir_ + "/").has_value());
  EXPECT_FALSE(AtomicOutput::Create(dir_ + "/missing-folder/out.bin").has_value());
}

TEST_F(AtomicOutputTest, RefusesAnInputAsTheTarget) {
  const std::string weights = dir_ + "/model.safetensors", link = dir_ + "/hard.bin";
  Put(weights, "weights");
  ASSERT_EQ(::link(weights.c_str(), link.c_str()), 0);
  // The file itself, a hard link to it, a folder holding it.
  for (const auto& [target, inputs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {weights, {weights}}, {link, {"other", weights}}, {weights, {dir_}}}) {
    auto out = AtomicOutput::Create(target, inputs);
    ASSERT_FALSE(out.has_value()) << target;
    EXPECT_NE(out.error().message.find("is the same file as"), std::string::npos)
        << out.error().message;
  }
  EXPECT_EQ(Slurp(weights), "weights");
  // Another file, and a GGUF beside the weights of a folder input (a previous output), are fine.
  EXPECT_TRUE(AtomicOutput::Create(dir_ + "/other.bin", {weights, dir_}).has_value());
  Put(dir_ + "/model.gguf", "old output");
  EXPECT_TRUE(AtomicOutput::Create(dir_ + "/model.gguf", {dir_}).has_value());
}

// A process that has the previous file mapped keeps its bytes (no SIGBUS, no new bytes).
TEST_F(AtomicOutputTest, AMappedPreviousFileKeepsItsBytes) {
  const std::string target = dir_ + "/model.gguf";
  const std::string old_bytes(1 << 20, 'a');
  Put(target, old_bytes);
  auto mapped = MappedFile::Open(target);
  ASSERT_TRUE(mapped.has_value()) << mapped.error().message;
  auto out = AtomicOutput::Create(target);
  ASSERT_TRUE(out.has_value());
  ASSERT_TRUE(out->Write("short").has_value());
  ASSERT_TRUE(out->Commit().has_value());
  EXPECT_EQ(Slurp(target), "short");
  const auto bytes = mapped->bytes();
  ASSERT_EQ(bytes.size(), old_bytes.size());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), old_bytes);  // reads the last page too
}

// SIGINT or SIGTERM while writing: the temporary is removed, the previous file stays, and the
// process ends by the signal as it would have.
TEST_F(AtomicOutputTest, ASignalRemovesTheTemporaryAndKeepsThePreviousFile) {
  const std::string target = dir_ + "/out.gguf";
  Put(target, "previous");
  for (int sig : {SIGINT, SIGTERM}) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto out = AtomicOutput::Create(target);
      if (!out || !out->Write("partial").has_value()) std::_Exit(3);
      ::raise(sig);
      std::_Exit(4);  // not reached: the default action ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(Slurp(target), "previous");
    EXPECT_EQ(Names(), std::vector<std::string>{"out.gguf"});
  }
  // Afterwards the handler is gone: the process's own action is back.
  { ASSERT_TRUE(AtomicOutput::Create(target).has_value()); }
  struct sigaction current {};
  ::sigaction(SIGINT, nullptr, &current);
  EXPECT_EQ(current.sa_handler, SIG_DFL);
}

// A program with its own SIGINT handler (chat's Ctrl-C) keeps running: the temporary is removed,
// the program's handler runs, and Commit says that the file was not written.
volatile sig_atomic_t g_interrupts = 0;
extern "C" void CountInterrupt(int) { g_interrupts = g_interrupts + 1; }

TEST_F(AtomicOutputTest, WithTheProgramsOwnHandlerCommitReportsTheInterruption) {
  struct sigaction own {};
  struct sigaction previous {};
  own.sa_handler = CountInterrupt;
  sigemptyset(&own.sa_mask);
  ASSERT_EQ(::sigaction(SIGINT, &own, &previous), 0);
  const std::string target = dir_ + "/out.gguf";
  Put(target, "previous");
  {
    auto out = AtomicOutput::Create(target);
    ASSERT_TRUE(out.has_value()) << out.error().message;
    ASSERT_TRUE(out->Write("partial").has_value());
    ::raise(SIGINT);
    EXPECT_EQ(g_interrupts, 1);
    auto committed = out->Commit();
    ASSERT_FALSE(committed.has_value());
    EXPECT_NE(committed.error().message.find("interrupted by a signal"), std::string::npos)
        << committed.error().message;
  }
  EXPECT_EQ(Slurp(target), "previous");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.gguf"});
  struct sigaction current {};
  ::sigaction(SIGINT, &previous, &current);
  EXPECT_EQ(current.sa_handler, CountInterrupt);  // the program's handler is back
}

}  // namespace
}  // namespace kite
