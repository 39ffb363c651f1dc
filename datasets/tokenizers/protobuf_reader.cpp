#include "tapegrad/datasets/tokenizers/protobuf_reader.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace tapegrad::datasets::tokenizers {

float ProtoField::as_float() const {
  const auto bits = static_cast<std::uint32_t>(number_value);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string_view wire_type_name(std::uint32_t wire_type) {
  switch (wire_type) {
    case 0:
      return "varint";
    case 1:
      return "fixed64";
    case 2:
      return "length-delimited";
    case 3:
      return "start group";
    case 4:
      return "end group";
    case 5:
      return "fixed32";
    default:
      return "unknown";
  }
}

std::uint64_t ProtoReader::varint() {
  const std::size_t start = pos_;
  std::uint64_t value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= data_.size())
      throw std::runtime_error(
          fmt::format("the varint at byte {} runs past the end of the message ({} bytes)", start, data_.size()));
    const auto byte = static_cast<unsigned char>(data_[pos_++]);
    value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
  throw std::runtime_error(fmt::format("the varint at byte {} is longer than 10 bytes", start));
}

bool ProtoReader::next(ProtoField& field) {
  if (pos_ >= data_.size()) return false;
  const std::size_t start = pos_;
  const std::uint64_t key = varint();
  field = ProtoField{};
  field.wire_type = static_cast<std::uint32_t>(key & 7);
  if ((key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF)
    throw std::runtime_error(fmt::format("the field at byte {} has number {}, outside [1, 2^29)", start, key >> 3));
  field.number = static_cast<std::uint32_t>(key >> 3);
  const auto fixed = [&](std::size_t n) {
    if (data_.size() - pos_ < n)
      throw std::runtime_error(fmt::format("field {} at byte {} ({}) runs past the end of the message ({} bytes)",
                                           field.number, start, wire_type_name(field.wire_type), data_.size()));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  };
  switch (field.wire_type) {
    case 0:
      field.number_value = varint();
      break;
    case 1:
      field.number_value = fixed(8);
      break;
    case 5:
      field.number_value = fixed(4);
      break;
    case 2: {
      const std::uint64_t length = varint();
      if (length > data_.size() - pos_)
        throw std::runtime_error(
            fmt::format("field {} at byte {} has length {}, past the end of the message ({} bytes)", field.number,
                        start, length, data_.size()));
      field.bytes = data_.substr(pos_, static_cast<std::size_t>(length));
      pos_ += static_cast<std::size_t>(length);
      break;
    }
    default:
      throw std::runtime_error(fmt::format("field {} at byte {} has wire type {} ({}), which this reader does not read",
                                           field.number, start, field.wire_type, wire_type_name(field.wire_type)));
  }
  return true;
}

}  // namespace tapegrad::datasets::tokenizers
