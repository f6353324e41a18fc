// Observer: what a run shows to whoever watches it node by node. Executable::Run calls it after
// each node with the node's output as the kernels left it, before a later node may reuse that
// memory (the memory plan shares arena bytes between values whose lifetimes do not overlap, so
// after the run only graph outputs are still there). The profiler (op_profile.h), calibration
// (activation ranges) and a simulator's cost model are observers.
//
//   struct MaxAbs : Observer {
//     Status AfterNode(const Executable& e, int32_t node, const TensorArg& out) override {...}
//   };
//   MaxAbs max_abs;
//   KITE_RETURN_IF_ERROR(executable->Run(*state, {.observer = &max_abs}));
#pragma once

#include <cstdint>

#include "backends/backend.h"
#include "base/status.h"

namespace kite {

class Executable;

class Observer {
 public:
  virtual ~Observer() = default;

  // Just before node `node` (an index into executable.graph().nodes()) runs. Views never run,
  // so they are never observed.
  virtual void BeforeNode(const Executable& executable, int32_t node) {}

  // Just after node `node` ran, with its output; the output's memory is valid only during the
  // call. An error stops the run and is returned by Run, naming the node.
  virtual Status AfterNode(const Executable& executable, int32_t node,
                           const TensorArg& output) = 0;
};

}  // namespace kite
