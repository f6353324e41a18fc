// Files are never destroyed, half-written or read blindly (issue 9): every output goes through one
// writer that refuses devices, links and the command's own inputs and replaces the target only
// when the whole file is written (Ctrl-C included); every input is checked by kind and size before
// a blocking open; chat sessions carry a checksum and the model's identity.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "format/gguf.h"

namespace kite {
namespace {

using testing::CommandResult;
using testing::ExecProgram;
using testing::RunKite;
using testing::SourcePath;

namespace fs = std::filesystem;
using std::chrono::steady_clock;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// XORs bytes [begin, end) of `path` with `mask`, every `stride`-th byte from `begin`.
void XorRange(const std::string& path, uint64_t begin, uint64_t end, char mask = 0x5a,
              size_t stride = 1) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes(end - begin, '\0');
  file.seekg(static_cast<std::streamoff>(begin));
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  for (size_t i = 0; i < bytes.size(); i += stride) bytes[i] = static_cast<char>(bytes[i] ^ mask);
  file.seekp(static_cast<std::streamoff>(begin));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Another model of the same shape and embeddings: the demo's copy in `folder` with one layer's
// f16 down projection negated (the sign bit of each little-endian f16's high byte), a valid
// model that answers differently, as a fine-tune that kept the embeddings would.
void ChangeALayer(const std::string& folder) {
  const std::string weights = folder + "/model.safetensors";
  std::ifstream in(weights, std::ios::binary);
  uint64_t header_bytes = 0;
  in.read(reinterpret_cast<char*>(&header_bytes), 8);
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  in.close();
  const auto offsets =
      nlohmann::json::parse(header)["model.layers.1.mlp.down_proj.weight"]["data_offsets"];
  XorRange(weights, 8 + header_bytes + offsets[0].get<uint64_t>() + 1,
           8 + header_bytes + offsets[1].get<uint64_t>(), static_cast<char>(0x80), 2);
}

class FileSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "kite_file_safety_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // The names in the folder, sorted: a temporary left behind shows up here.
  std::vector<std::string> Names(const std::string& folder) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // A copy of models/demo in the temporary folder.
  std::string CopyDemo(const std::string& name) {
    const std::string copy = Path(name);
    fs::copy(SourcePath("models/demo"), copy, fs::copy_options::recursive);
    return copy;
  }

  // A small model written by kite synth (one block, 512 tokens).
  void Synth(const std::string& out) {
    CommandResult result = RunKite({"synth", "--preset", "smollm2-135m", "--type", "q8_0",
                                    "--layers", "1", "--vocab", "512", "-q", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  std::string dir_;
};

// kite started with stdin from /dev/null and stderr into a file; a process that outlives
// `seconds` is killed and reported as timed out, so that a read that blocks fails the test
// instead of hanging it.
struct Finished {
  bool timed_out = false;
  int exit_code = -1;  // 128 + the signal when killed by one
  std::string err;
};

pid_t Spawn(const std::vector<std::string>& args, const std::string& err_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(err, 1);
    ::dup2(err, 2);
    ExecProgram(KITE_BINARY, args);
  }
  return pid;
}

Finished Wait(pid_t pid, const std::string& err_path, double seconds) {
  Finished finished;
  const auto deadline = steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      finished.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  finished.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  finished.err = Slurp(err_path);
  return finished;
}

Finished RunWithTimeout(const std::vector<std::string>& args, const std::string& err_path,
                        double seconds = 20) {
  return Wait(Spawn(args, err_path), err_path, seconds);
}

// --- outputs ---------------------------------------------------------------------------------

// As root, `-o /dev/null` used to delete /dev/null: a failed convert unlinked whatever -o named.
TEST_F(FileSafetyTest, ConvertRefusesADeviceOutputAndLeavesIt) {
  const std::string device = Path("mynull");
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod needs root: " << std::strerror(errno);
  }
  CommandResult result = RunKite({"convert", SourcePath("models/demo"), "-q", "-o", device});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(Contains(result.err, device + ": is a character device")) << result.err;
  struct stat st {};
  ASSERT_EQ(::lstat(device.c_str(), &st), 0) << "the device node was removed";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"mynull"});
}

TEST_F(FileSafetyTest, ConvertRefusesASymbolicLinkOutputAndLeavesBoth) {
  const std::string real = Path("real.gguf"), link = Path("link.gguf");
  std::ofstream(real) << "keep me";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  CommandResult result = RunKite({"convert", SourcePath("models/demo"), "-q", "-o", link});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(Contains(result.err, link + ": is a symbolic link")) << result.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), real);
  EXPECT_EQ(Slurp(real), "keep me");
}

TEST_F(FileSafetyTest, ConvertRefusesToOverwriteItsOwnInput) {
  const std::string folder = CopyDemo("d");
  const std::string weights = folder + "/model.safetensors";
  const std::string before = Slurp(weights);
  CommandResult result = RunKite({"convert", folder, "-q", "-o", weights});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(Contains(result.err, "is the same file as")) << result.err;
  EXPECT_TRUE(Slurp(weights) == before) << weights << " changed";
  // A GGUF beside the weights is no input: converting there (again) works.
  ASSERT_EQ(RunKite({"convert", folder, "-q", "-o", folder + "/d.gguf"}).exit_code, 0);
  CommandResult again = RunKite({"convert", folder, "-q", "-o", folder + "/d.gguf"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST_F(FileSafetyTest, SynthRefusesToOverwriteItsTokenizer) {
  const std::string model = Path("x.gguf");
  Synth(model);
  const std::string before = Slurp(model);
  CommandResult result = RunKite({"synth", "--preset", "smollm2-135m", "--type", "q8_0", "--layers",
                                  "1", "--vocab", "512", "--tokenizer", model, "-q", "-o", model});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(Contains(result.err, model + ": is the same file as " + model)) << result.err;
  EXPECT_TRUE(Slurp(model) == before) << model << " changed";
}

// Ctrl-C while synth writes: the previous file stays byte for byte and no temporary is left.
TEST_F(FileSafetyTest, InterruptedSynthLeavesThePreviousFileAndNoTemporary) {
  const std::string out = Path("out.gguf");
  Synth(out);
  const std::string before = Slurp(out);
  // The whole model (30 blocks of smollm2-135m at f32, 0.5 GB): seconds of writing.
  const std::string err_path = ::testing::TempDir() + "kite_file_safety_synth.err";
  const pid_t pid =
      Spawn({"synth", "--preset", "smollm2-135m", "--type", "f32", "-q", "-o", out}, err_path);
  bool seen = false;
  const auto deadline = steady_clock::now() + std::chrono::seconds(60);
  while (!seen && steady_clock::now() < deadline && ::waitpid(pid, nullptr, WNOHANG) == 0) {
    for (const std::string& name : Names(dir_)) seen = seen || Contains(name, ".kite-tmp-");
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGINT);
  const Finished finished = Wait(pid, err_path, 60);
  ASSERT_TRUE(seen) << "no temporary file appeared beside " << out << ": " << finished.err;
  EXPECT_FALSE(finished.timed_out);
  EXPECT_EQ(finished.exit_code, 128 + SIGINT) << finished.err;
  EXPECT_TRUE(Slurp(out) == before) << out << " is not the previous file";
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"out.gguf"});
  std::remove(err_path.c_str());
}

// A chat running on a GGUF keeps its model when the file is rewritten (it used to read the new
// bytes through its mapping of the truncated file, or die of SIGBUS while the file was short).
TEST_F(FileSafetyTest, ARunningChatKeepsItsModelWhenTheFileIsRewritten) {
  const std::string model = Path("model.gguf"), other = CopyDemo("other");
  ChangeALayer(other);
  ASSERT_EQ(RunKite({"convert", SourcePath("models/demo"), "-q", "-o", model}).exit_code, 0);
  const std::vector<std::string> args = {"chat", "-m", model, "--temp", "0", "-n", "6"};
  const CommandResult first = RunKite(args, "Hello there\n");
  const CommandResult both = RunKite(args, "Hello there\nWhat now?\n");
  ASSERT_EQ(both.exit_code, 0) << both.err;
  ASSERT_FALSE(first.out.empty());
  // The other weights answer differently, so a second reply that came from them would show.
  const CommandResult from_other = RunKite({"chat", "-m", other, "--temp", "0", "-n", "6"},
                                           "Hello there\nWhat now?\n");
  ASSERT_EQ(from_other.exit_code, 0) << from_other.err;
  ASSERT_NE(from_other.out, both.out);

  int in[2];
  ASSERT_EQ(::pipe(in), 0);
  const std::string out_path = Path("chat.out"), err_path = Path("chat.err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::close(in[0]);
    ::close(in[1]);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ExecProgram(KITE_BINARY, args);
  }
  ::close(in[0]);
  const std::string turn1 = "Hello there\n", turn2 = "What now?\n";
  ASSERT_EQ(::write(in[1], turn1.data(), turn1.size()), static_cast<ssize_t>(turn1.size()));
  const auto deadline = steady_clock::now() + std::chrono::seconds(60);
  while (Slurp(out_path).size() < first.out.size() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Other weights of the same size (the old writer truncated the file and wrote it again).
  ASSERT_EQ(RunKite({"convert", other, "-q", "-o", model}).exit_code, 0);
  ASSERT_EQ(::write(in[1], turn2.data(), turn2.size()), static_cast<ssize_t>(turn2.size()));
  ::close(in[1]);
  const Finished finished = Wait(pid, err_path, 60);
  EXPECT_FALSE(finished.timed_out);
  EXPECT_EQ(finished.exit_code, 0) << finished.err;
  EXPECT_EQ(Slurp(out_path), both.out) << "the second reply did not come from the first model";
}

// --- inputs ----------------------------------------------------------------------------------

// A FIFO given as the model used to block every command forever on its open.
TEST_F(FileSafetyTest, AFifoModelFailsAtOnce) {
  const std::string fifo = Path("f");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const std::string err_path = Path("err.txt");
  const std::string text = SourcePath("models/demo/heldout.txt");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"inspect", fifo},
           {"run", "-m", fifo, "-p", "hi", "-n", "1"},
           {"bench", "-m", fifo},
           {"eval", "ppl", "-m", fifo, "-f", text},
           {"run", "-m", SourcePath("models/demo"), "-f", fifo, "-n", "1"},
           {"tokenize", "-m", fifo, "-p", "hi"},
       }) {
    const Finished finished = RunWithTimeout(args, err_path);
    EXPECT_FALSE(finished.timed_out) << args[0] << " blocked on the FIFO";
    EXPECT_NE(finished.exit_code, 0) << args[0];
    EXPECT_TRUE(Contains(finished.err, fifo + ": is a FIFO")) << args[0] << ": " << finished.err;
  }
}

// A folder given as a prompt or text file used to read as an empty text.
TEST_F(FileSafetyTest, AFolderAsTextIsAnErrorNamingIt) {
  const std::string model = SourcePath("models/demo");
  CommandResult run = RunKite({"run", "-m", model, "-f", dir_, "-n", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(Contains(run.err, dir_ + ": is a directory")) << run.err;
  CommandResult eval = RunKite({"eval", "ppl", "-m", model, "-f", dir_, "--ctx", "64"});
  EXPECT_EQ(eval.exit_code, 1) << eval.err;
  EXPECT_TRUE(Contains(eval.err, dir_ + ": is a directory")) << eval.err;
}

// A 100 MB run.json took 2.6 GB of memory; it is refused from its size.
TEST_F(FileSafetyTest, AHugeRunConfigIsRefusedWithItsSize) {
  const std::string config = Path("run.json");
  std::ofstream(config).close();
  ASSERT_EQ(::truncate(config.c_str(), 100'000'000), 0);  // sparse: no disk, no time
  const std::string err_path = Path("err.txt");
  const Finished finished = RunWithTimeout(
      {"run", "-m", SourcePath("models/demo"), "--config", config, "-p", "hi", "-n", "1"},
      err_path);
  EXPECT_FALSE(finished.timed_out);
  EXPECT_EQ(finished.exit_code, 1) << finished.err;
  EXPECT_TRUE(Contains(finished.err, config + ": 100000000 bytes, more than the 16777216 bytes"))
      << finished.err;
}

// --- chat sessions -----------------------------------------------------------------------------

std::vector<std::string> ChatArgs(const std::string& model) {
  return {"chat", "-m", model, "--temp", "0", "-n", "4"};
}

TEST_F(FileSafetyTest, ADamagedSessionIsRefused) {
  const std::string model = SourcePath("models/demo");
  const std::string saved = Path("chat.kv");
  CommandResult save = RunKite(ChatArgs(model), "Hello there\n/save " + saved + "\n");
  ASSERT_EQ(save.exit_code, 0) << save.err;
  ASSERT_TRUE(Contains(save.err, "saved")) << save.err;
  CommandResult good = RunKite(ChatArgs(model), "/load " + saved + "\n");
  EXPECT_TRUE(Contains(good.err, "tokens from")) << good.err;

  uint64_t kv_begin = 0;  // where the last tensor's data (a layer's V rows) begin
  {
    auto file = GgufFile::Open(saved);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    const GgufTensorInfo& last = file->tensors().back();
    ASSERT_EQ(last.name.back(), 'v');
    kv_begin = file->data_offset() + last.offset;
  }
  XorRange(saved, kv_begin + 10, kv_begin + 20);
  CommandResult damaged = RunKite(ChatArgs(model), "/load " + saved + "\n");
  EXPECT_TRUE(Contains(damaged.err, saved + ": damaged")) << damaged.err;
  EXPECT_FALSE(Contains(damaged.err, "tokens from")) << damaged.err;  // "loaded N tokens from"
}

// The demo with one layer's weights changed: the KV cache saved with the original does not apply.
TEST_F(FileSafetyTest, ASessionOfAnotherModelIsRefused) {
  const std::string saved = Path("chat.kv");
  CommandResult save =
      RunKite(ChatArgs(SourcePath("models/demo")), "Hello there\n/save " + saved + "\n");
  ASSERT_EQ(save.exit_code, 0) << save.err;

  const std::string other = CopyDemo("other");
  ChangeALayer(other);

  CommandResult loaded = RunKite(ChatArgs(other), "/load " + saved + "\n");
  EXPECT_TRUE(Contains(loaded.err, saved + ": saved with another model")) << loaded.err;
  EXPECT_FALSE(Contains(loaded.err, "tokens from")) << loaded.err;
}

// /save never writes over the model it runs.
TEST_F(FileSafetyTest, ChatSaveRefusesTheModelFile) {
  const std::string model = Path("model.gguf");
  Synth(model);
  const std::string before = Slurp(model);
  CommandResult save = RunKite(ChatArgs(model), "/save " + model + "\n");
  EXPECT_TRUE(Contains(save.err, model + ": is the same file as")) << save.err;
  EXPECT_TRUE(Slurp(model) == before) << model << " changed";
}

}  // namespace
}  // namespace kite
