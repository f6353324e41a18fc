#include "server/fair_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/request_run.h"

namespace kite {
namespace {

std::shared_ptr<RequestRun> Queued(RequestId id, const std::string& client) {
  ServeRequest request;
  request.prompt = {1};
  request.client = client;
  return std::make_shared<RequestRun>(id, std::move(request), nullptr);
}

std::vector<RequestId> Drain(FairQueue& queue) {
  std::vector<RequestId> order;
  while (auto run = queue.Pop()) order.push_back(run->id());
  return order;
}

TEST(FairQueue, ServesClientsRoundRobinAndEachClientInArrivalOrder) {
  FairQueue queue;
  // Client a bursts four requests before b and c send one or two.
  queue.Push(Queued(1, "a"));
  queue.Push(Queued(2, "a"));
  queue.Push(Queued(3, "a"));
  queue.Push(Queued(4, "b"));
  queue.Push(Queued(5, "a"));
  queue.Push(Queued(6, "c"));
  queue.Push(Queued(7, "b"));
  EXPECT_EQ(queue.size(), 7u);
  EXPECT_EQ(Drain(queue), (std::vector<RequestId>{1, 4, 6, 2, 7, 3, 5}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.Pop(), nullptr);
}

TEST(FairQueue, AClientThatComesBackJoinsAtTheEndOfTheRound) {
  FairQueue queue;
  queue.Push(Queued(1, "a"));
  queue.Push(Queued(2, "b"));
  EXPECT_EQ(queue.Pop()->id(), 1u);  // a has nothing left: out of the round
  queue.Push(Queued(3, "a"));        // back after b
  queue.Push(Queued(4, "b"));
  EXPECT_EQ(Drain(queue), (std::vector<RequestId>{2, 3, 4}));
}

TEST(FairQueue, RemoveIfTakesOutThePickedAndKeepsTheOrderOfTheRest) {
  FairQueue queue;
  for (RequestId id = 1; id <= 6; ++id) queue.Push(Queued(id, id % 2 ? "odd" : "even"));
  auto removed = queue.RemoveIf([](const RequestRun& run) { return run.id() % 3 == 0; });
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0]->id(), 3u);
  EXPECT_EQ(removed[1]->id(), 6u);
  EXPECT_EQ(queue.size(), 4u);
  EXPECT_EQ(Drain(queue), (std::vector<RequestId>{1, 2, 5, 4}));
  queue.Push(Queued(7, "x"));
  EXPECT_EQ(queue.Clear().size(), 1u);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace kite
