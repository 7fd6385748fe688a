#include "client/json_output.h"

#include "google/protobuf/util/json_util.h"

namespace memgate::cli {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = true;
  std::string json;
  // Printing a well-formed message cannot fail; an empty result would show.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace memgate::cli
