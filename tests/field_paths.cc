#include "tests/field_paths.h"

#include "gtest/gtest.h"

namespace memgate::testing {
namespace {

void Collect(const google::protobuf::Descriptor* message,
             const std::string& prefix, const std::set<std::string>& containers,
             std::set<std::string>& out) {
  for (int i = 0; i < message->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = message->field(i);
    const std::string path = prefix + f->name();
    if (!containers.count(path)) out.insert(path);
    if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      Collect(f->message_type(), path + ".", containers, out);
    }
  }
}

}  // namespace

std::set<std::string> FieldPaths(const google::protobuf::Descriptor* message,
                                 const std::set<std::string>& containers) {
  std::set<std::string> out;
  Collect(message, "", containers, out);
  return out;
}

void ExpectEveryPathClassified(const std::set<std::string>& paths,
                               const std::vector<std::string>& rows,
                               const std::string& where) {
  std::set<std::string> classified;
  for (const std::string& row : rows) {
    EXPECT_TRUE(classified.insert(row).second) << "twice: " << row;
    EXPECT_TRUE(paths.count(row)) << "not a field: " << row;
  }
  for (const std::string& path : paths) {
    EXPECT_TRUE(classified.count(path))
        << path << ": a field without a row in " << where
        << ": say what it changes (and prove it), or refuse it";
  }
}

std::string TestNameOfPath(const std::string& path) {
  std::string name;
  for (char c : path) name += c == '.' ? '_' : c;
  return name;
}

}  // namespace memgate::testing
