/// @file
/// A reader of Protocol Buffers' wire format (the encoding of a serialized message): the fields of one
/// message in order, each a number, a wire type and its value, without a schema.
#pragma once

#include <cstdint>
#include <string_view>

namespace tapegrad::datasets::tokenizers {

/// One field of a message. For wire type 0 (varint) `number_value` holds the varint, for 1 and 5
/// (fixed64, fixed32) the little-endian bits; for 2 (length-delimited: strings, bytes, sub-messages)
/// `bytes` views the payload.
struct ProtoField {
  std::uint32_t number = 0;
  std::uint32_t wire_type = 0;
  std::uint64_t number_value = 0;
  std::string_view bytes;

  /// The value as a proto int32 (a varint, negative values sign-extended to 64 bits on the wire).
  std::int32_t as_int32() const { return static_cast<std::int32_t>(static_cast<std::uint32_t>(number_value)); }
  bool as_bool() const { return number_value != 0; }
  /// The value of a fixed32 field as a float.
  float as_float() const;
};

/// Walks the fields of one serialized message. Throws std::runtime_error naming the offset and the
/// problem for a truncated or malformed message (a varint longer than 10 bytes, a length past the
/// end, a group or an unknown wire type, field number 0).
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view message) : data_(message) {}
  /// Reads the next field into `field`; false at the end of the message.
  bool next(ProtoField& field);
  /// The offset of the next field in the message.
  std::size_t offset() const { return pos_; }

 private:
  std::uint64_t varint();
  std::string_view data_;
  std::size_t pos_ = 0;
};

/// What a field of wire type `wire_type` is called in messages ("varint", "fixed32", ...).
std::string_view wire_type_name(std::uint32_t wire_type);

}  // namespace tapegrad::datasets::tokenizers
