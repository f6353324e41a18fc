#include <cstdio>

#include "profile/report.h"

namespace kite {

namespace {

nlohmann::json GraphJson(const GraphCost& g) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpCost& op : g.ops) {
    nlohmann::json o = {{"node", op.node},
                        {"op", op.op},
                        {"layer", op.layer},
                        {"unit", UnitName(op.unit)},
                        {"shape", op.shape},
                        {"bytes", op.bytes},
                        {"macs", op.macs},
                        {"compute_us", op.compute_s * 1e6},
                        {"memory_us", op.memory_s * 1e6},
                        {"overhead_us", op.overhead_s * 1e6},
                        {"time_us", op.time_s * 1e6},
                        {"bound", BoundName(op.bound)}};
    if (!op.placement.empty()) o["placement"] = op.placement;
    ops.push_back(std::move(o));
  }
  return {{"tokens", g.tokens},          {"static_ctx", g.static_ctx},
          {"total_ms", g.total_s * 1e3}, {"graph_overhead_us", g.graph_overhead_s * 1e6},
          {"npu_ops", g.npu_ops},        {"cpu_ops", g.cpu_ops},
          {"converts", g.converts},      {"ops", std::move(ops)}};
}

}  // namespace

nlohmann::json ProfileJson(const ProfileResult& r) {
  const Chip& c = r.chip;
  return {
      {"model",
       {{"source", r.config.source},
        {"layers", r.config.n_layers},
        {"hidden", r.config.hidden},
        {"heads", r.config.n_heads},
        {"kv_heads", r.config.n_kv_heads},
        {"head_dim", r.config.head_dim},
        {"ffn", r.config.ffn},
        {"vocab", r.config.vocab}}},
      {"chip",
       {{"name", c.name},
        {"marketing", c.marketing},
        {"soc", c.soc},
        {"hexagon", c.hexagon},
        {"dram_peak_gbs", c.dram_peak_gbs},
        {"fitted_from", c.cost.fitted_from}}},
      {"recipe", r.recipe.name},
      {"options", {{"prompt", r.options.prompt}, {"ctx", r.options.ctx}, {"chunk", r.options.chunk}}},
      {"summary",
       {{"ttft_ms", r.ttft_s * 1e3},
        {"prefill_tokens_per_s", r.prefill_tps},
        {"decode_tokens_per_s", r.decode_tps},
        {"peak_memory_bytes", r.peak_bytes},
        {"weight_bytes", r.weight_bytes},
        {"kv_cache_bytes", r.kv_bytes},
        {"npu_ops", r.decode.npu_ops},
        {"cpu_ops", r.decode.cpu_ops}}},
      {"prefill", GraphJson(r.prefill)},
      {"decode", GraphJson(r.decode)},
  };
}

nlohmann::json ProfileTrace(const ProfileResult& r) {
  nlohmann::json events = nlohmann::json::array();
  auto thread_name = [&](int tid, const char* name) {
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_name"},
                      {"args", {{"name", name}}}});
  };
  thread_name(1, "NPU");
  thread_name(2, "CPU");
  double now_us = 0;
  auto phase = [&](const char* name, const GraphCost& g) {
    events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", 3}, {"name", name}, {"ts", now_us},
                      {"dur", g.total_s * 1e6}});
    now_us += g.graph_overhead_s * 1e6;
    for (const OpCost& op : g.ops) {
      events.push_back({{"ph", "X"},
                        {"pid", 1},
                        {"tid", op.unit == ComputeUnit::kNpu ? 1 : 2},
                        {"name", op.node},
                        {"cat", op.op},
                        {"ts", now_us},
                        {"dur", op.time_s * 1e6},
                        {"args", {{"shape", op.shape}, {"bound", BoundName(op.bound)},
                                  {"bytes", op.bytes}, {"macs", op.macs}}}});
      now_us += op.time_s * 1e6;
    }
  };
  thread_name(3, "graph");
  phase("prefill chunk", r.prefill);
  phase("decode step", r.decode);
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace kite
