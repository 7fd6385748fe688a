#include "service/unknown_fields.h"

#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "proto/memgate.pb.h"

namespace memgate {
namespace {

// What a newer client's field becomes in this build's message.
google::protobuf::UnknownFieldSet* UnknownFieldsOf(
    google::protobuf::Message& m) {
  return m.GetReflection()->MutableUnknownFields(&m);
}

// A field a newer client sets that this build's memgate.v1 lacks arrives
// as an unknown field: here number 999 of ParallelConfig, and of a
// candidate in a repeated field.
TEST(UnknownFieldsTest, AnUnknownFieldIsNamedByItsPathAndNumber) {
  v1::AdmitRequest request;
  request.mutable_job()->mutable_parallel()->set_tensor_parallel(8);
  EXPECT_TRUE(RefuseUnknownFields(request, "").ok());

  UnknownFieldsOf(*request.mutable_job()->mutable_parallel())
      ->AddVarint(999, 4);
  const absl::Status status = RefuseUnknownFields(request, "");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind(
                "job.parallel: field 999 is not a field of this server's "
                "memgate.v1.ParallelConfig",
                0),
            0u)
      << status;

  v1::PlanResponse plan;
  plan.add_candidates();
  UnknownFieldsOf(*plan.add_candidates())->AddFixed32(77, 1);
  EXPECT_EQ(RefuseUnknownFields(plan, "").message().rfind(
                "candidates[1]: field 77", 0),
            0u);

  v1::Job top;
  UnknownFieldsOf(top)->AddLengthDelimited(500, "x");
  EXPECT_EQ(RefuseUnknownFields(top, "").message().rfind("request: field 500",
                                                          0),
            0u);
}

// Bytes from the wire: a Job serialized with a field this build does not
// know parses with it kept as unknown, and is refused.
TEST(UnknownFieldsTest, UnknownFieldsFromTheWireAreRefused) {
  v1::Job job;
  job.mutable_training()->set_seq_length(8192);
  std::string wire = job.SerializeAsString();
  // Field 4000, varint 2: tag (4000 << 3 | 0) as a varint, then the value.
  for (uint32_t tag = 4000u << 3; ; tag >>= 7) {
    if (tag < 0x80) {
      wire += static_cast<char>(tag);
      break;
    }
    wire += static_cast<char>((tag & 0x7f) | 0x80);
  }
  wire += static_cast<char>(2);
  v1::Job parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_EQ(parsed.training().seq_length(), 8192u);
  EXPECT_NE(RefuseUnknownFields(parsed, "job").message().find(
                "job: field 4000"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate
