#include "client/json_output.h"

#include "google/protobuf/util/json_util.h"

namespace memgate::cli {

namespace {

std::string Print(const google::protobuf::Message& message, bool whitespace) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = whitespace;
  std::string json;
  // Printing a well-formed message cannot fail; an empty result would show.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  return Print(message, true);
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  return Print(message, false);
}

}  // namespace memgate::cli
