// cli/sse_reader: the event-stream rules of the HTML standard (fields, joined data lines, the
// three line ends, comments, events without data), and the same events however the bytes are
// split across reads.
#include "cli/sse_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kite::cli {
namespace {

struct Seen {
  std::string type, data, id;
  bool operator==(const Seen&) const = default;
};

// Every event of `pieces` pushed one after the other.
std::vector<Seen> Read(const std::vector<std::string>& pieces) {
  std::vector<Seen> seen;
  SseReader reader([&](const SseEvent& event) {
    seen.push_back({event.type, event.data, event.id});
    return true;
  });
  for (const std::string& piece : pieces) EXPECT_TRUE(reader.Push(piece).value_or(false));
  reader.Finish();
  return seen;
}

// An OpenAI chat stream as its API reference shows one: role first, content deltas, the finish,
// the usage chunk, [DONE]; with a comment line and a multi-byte character.
const std::string kChatStream =
    ": keep-alive\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\r\n\r\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"Caf\xC3\xA9\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}]}\r\r"
    "data: [DONE]\n\n";

TEST(SseReader, ReadsOpenAIChunksAndDone) {
  const std::vector<Seen> seen = Read({kChatStream});
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].type, "message");
  EXPECT_NE(seen[1].data.find("Caf\xC3\xA9"), std::string::npos);
  EXPECT_NE(seen[2].data.find("\"finish_reason\":\"stop\""), std::string::npos);
  EXPECT_EQ(seen[3].data, "[DONE]");
}

TEST(SseReader, SameEventsHoweverTheBytesAreSplit) {
  const std::vector<Seen> whole = Read({kChatStream});
  // Every split into two reads: inside a field name, between "\r" and "\n", inside "é".
  for (size_t cut = 1; cut < kChatStream.size(); ++cut) {
    ASSERT_EQ(Read({kChatStream.substr(0, cut), kChatStream.substr(cut)}), whole) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : kChatStream) bytes.emplace_back(1, c);
  EXPECT_EQ(Read(bytes), whole);
}

TEST(SseReader, CrLfSplitAcrossReadsIsOneLineEnd) {
  // Were the "\n" after a "\r" at the end of a read taken for a second line end, "a" would be
  // dispatched alone and "b" would start a new event.
  const std::vector<Seen> seen = Read({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].data, "a\nb");
}

TEST(SseReader, FieldsAsTheStandardSays) {
  const std::vector<Seen> seen = Read({
      "\xEF\xBB\xBF"        // a byte order mark at the start is skipped
      "event: error\n"
      "id: 7\n"
      "data:no space\n"     // the space after the colon is optional
      "data:  two spaces\n" // only one is removed
      "data\n"              // a field without a colon: an empty value
      "retry: 100\n"
      "unknown: x\n"
      "\n"
      "event: ping\n\n"     // no data: not dispatched
      "id: 8\n"
      "data: last\n\n"
      "data: cut short\n"   // the stream ends before the blank line: dropped
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (Seen{"error", "no space\n two spaces\n", "7"}));
  EXPECT_EQ(seen[1], (Seen{"message", "last", "8"}));
}

TEST(SseReader, HandlerStopsTheStream) {
  int calls = 0;
  SseReader reader([&](const SseEvent&) { return ++calls < 2; });
  const Result<bool> more = reader.Push("data: 1\n\ndata: 2\n\ndata: 3\n\n");
  ASSERT_TRUE(more.has_value());
  EXPECT_FALSE(*more);
  EXPECT_EQ(calls, 2);
}

TEST(SseReader, RefusesLinesAndEventsBeyondTheLimits) {
  SseReader lines([](const SseEvent&) { return true; }, /*max_line=*/16, /*max_event=*/64);
  ASSERT_TRUE(lines.Push("data: 0123456789").has_value());
  const Result<bool> long_line = lines.Push("abcdef");  // the same line, now 22 bytes
  ASSERT_FALSE(long_line.has_value());
  EXPECT_NE(long_line.error().message.find("longer than 16 bytes"), std::string::npos);

  SseReader events([](const SseEvent&) { return true; }, /*max_line=*/16, /*max_event=*/20);
  const Result<bool> big = events.Push("data: 0123456789\ndata: 0123456789\ndata: x\n");
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message.find("larger than 20 bytes"), std::string::npos);
}

}  // namespace
}  // namespace kite::cli
