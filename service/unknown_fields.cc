#include "service/unknown_fields.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"

namespace memgate {
namespace {

std::string Child(absl::string_view path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

}  // namespace

absl::Status RefuseUnknownFields(const google::protobuf::Message& message,
                                 absl::string_view path) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown =
      reflection->GetUnknownFields(message);
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path.empty() ? "request" : path, ": field ", unknown.field(0).number(),
        " is not a field of this server's ", message.GetTypeName(),
        " (a newer client's setting, which this server would read past "
        "and answer without): upgrade memgate_server to the client's "
        "release"));
  }
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() !=
        google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      continue;
    }
    if (!field->is_repeated()) {
      if (absl::Status s = RefuseUnknownFields(
              reflection->GetMessage(message, field),
              Child(path, field->name()));
          !s.ok()) {
        return s;
      }
      continue;
    }
    const int count = reflection->FieldSize(message, field);
    for (int i = 0; i < count; ++i) {
      if (absl::Status s = RefuseUnknownFields(
              reflection->GetRepeatedMessage(message, field, i),
              absl::StrCat(Child(path, field->name()), "[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace memgate
