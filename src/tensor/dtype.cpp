#include "tensor/dtype.h"

#include <cctype>
#include <string>
#include <vector>

#include "tensor/dtype_row.h"
#include "tensor/types/families.h"

namespace kite {

namespace {

// The families, in the order AllRows lists them (tensor/types/families.h).
constexpr std::span<const DTypeRow> (*kFamilies[])() = {
    internal::FloatTypeRows, internal::LegacyQuantRows, internal::KQuantRows,
    internal::NonLinearQuantRows, internal::OtherTypeRows, internal::PackedInt4Rows};

// Built once from the rows. Type ids are ggml's small numbers, so a row is found by indexing.
struct Registry {
  std::vector<const DTypeRow*> rows;
  std::vector<DTypeTraits> traits;  // traits[i] describes rows[i]
  std::vector<int> index_of_id;     // -1 where no row has the id
};

const Registry& GetRegistry() {
  static const Registry registry = [] {
    Registry r;
    for (auto family : kFamilies) {
      for (const DTypeRow& row : family()) {
        const auto id = static_cast<size_t>(row.dtype);
        if (id >= r.index_of_id.size()) r.index_of_id.resize(id + 1, -1);
        if (r.index_of_id[id] >= 0) continue;  // a second row for an id: dtype_row_test reports it
        r.index_of_id[id] = static_cast<int>(r.rows.size());
        r.rows.push_back(&row);
        r.traits.push_back(DTypeTraits{row.dtype, row.name, row.block_size, row.block_bytes,
                                       row.dequantize != nullptr});
      }
    }
    return r;
  }();
  return registry;
}

int IndexOf(uint32_t type_id) {
  const Registry& r = GetRegistry();
  return type_id < r.index_of_id.size() ? r.index_of_id[type_id] : -1;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

const DTypeRow* FindRow(DType dtype) {
  const int index = IndexOf(static_cast<uint32_t>(dtype));
  return index < 0 ? nullptr : GetRegistry().rows[static_cast<size_t>(index)];
}

std::span<const DTypeRow* const> AllRows() { return GetRegistry().rows; }

std::optional<DTypeTraits> LookupDType(uint32_t type_id) {
  if (type_id >= kFirstKiteOnlyTypeId) return std::nullopt;
  const int index = IndexOf(type_id);
  if (index < 0) return std::nullopt;
  return GetRegistry().traits[static_cast<size_t>(index)];
}

const DTypeTraits& Traits(DType dtype) {
  // Every enumerator has a row (dtype_row_test), so the f32 fallback is never taken.
  const int index = IndexOf(static_cast<uint32_t>(dtype));
  return GetRegistry().traits[index < 0 ? 0 : static_cast<size_t>(index)];
}

std::string_view DTypeName(DType dtype) { return Traits(dtype).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeRow* row : AllRows()) {
    if (EqualsIgnoreCase(row->name, name)) return row->dtype;
  }
  return std::nullopt;
}

Result<uint64_t> BytesFor(DType dtype, uint64_t elements) {
  const DTypeTraits& traits = Traits(dtype);
  if (elements % traits.block_size != 0) {
    return InvalidInput(std::to_string(elements) + " elements is not a whole number of " +
                        std::string(traits.name) + " blocks of " + std::to_string(traits.block_size));
  }
  const uint64_t blocks = elements / traits.block_size;
  uint64_t bytes;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(traits.block_bytes), &bytes)) {
    return InvalidInput(std::to_string(elements) + " " + std::string(traits.name) +
                        " elements overflow a 64-bit byte count");
  }
  return bytes;
}

Result<uint64_t> ElementCount(std::span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return InvalidInput("negative dimension " + std::to_string(dim));
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count) ||
        count > (uint64_t{1} << 60)) {
      return InvalidInput("shape has more than 2^60 elements");
    }
  }
  return count;
}

}  // namespace kite
