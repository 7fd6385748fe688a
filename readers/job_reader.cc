#include "readers/job_reader.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "estimator/clipped_text.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "readers/file_util.h"

namespace memgate {
namespace {

// The most of a parser's message quoted (it quotes the file's names and
// values, whose length is the file's).
constexpr size_t kMaxJobParseMessageBytes = 512;

// Keeps the first text-format error with its position.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ",
                            Clipped(message, kMaxJobParseMessageBytes));
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

absl::StatusOr<v1::Job> ParseJob(absl::string_view content) {
  v1::Job job;
  const absl::string_view body = absl::StripLeadingAsciiWhitespace(content);
  if (!body.empty() && body[0] == '{') {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;  // a typo must not pass silently
    const auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(content.data(), content.size()), &job,
        options);
    if (!status.ok()) {
      // Protocol Buffers quotes the file's field names and values.
      return absl::InvalidArgumentError(absl::StrCat(
          "job JSON: ", Clipped(std::string(status.message()),
                                kMaxJobParseMessageBytes)));
    }
    return job;
  }
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(content), &job)) {
    return absl::InvalidArgumentError(
        absl::StrCat("job text format: ", errors.first()));
  }
  return job;
}

absl::StatusOr<v1::Job> ReadJobFile(const std::string& path) {
  absl::StatusOr<std::string> content = ReadSmallFile(path, 1 << 20);
  if (!content.ok()) return content.status();
  absl::StatusOr<v1::Job> job = ParseJob(*content);
  if (!job.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", job.status().message()));
  }
  return job;
}

}  // namespace memgate
