"""C++ (and gRPC) code from .proto files with the system protoc.

Always Debian's protoc with Debian's protobuf headers, so generated code and
runtime match; nothing is fetched.
"""

_PROTOC = "/usr/bin/protoc"
_GRPC_PLUGIN = "/usr/bin/grpc_cpp_plugin"

def system_cc_proto_library(name, src, grpc = False, deps = [], imports = [], visibility = None):
    """Generates `name` (messages) and, with grpc, `name + "_grpc"` (stubs).

    Args:
      name: the cc_library holding the message classes.
      src: one .proto file in this package, imported as "<package>/<file>".
      grpc: also generate the gRPC service stubs as `name + "_grpc"`.
      deps: cc_libraries of the protos that `src` imports.
      imports: the .proto files that `src` imports (protoc reads them).
      visibility: of both libraries.
    """
    base = src[:-len(".proto")]
    pb = [base + ".pb.h", base + ".pb.cc"]
    grpc_pb = [base + ".grpc.pb.h", base + ".grpc.pb.cc"] if grpc else []
    cmd = "%s -I. --cpp_out=$(GENDIR) $(location %s)" % (_PROTOC, src)
    if grpc:
        cmd = "%s -I. --cpp_out=$(GENDIR) --grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=%s $(location %s)" % (_PROTOC, _GRPC_PLUGIN, src)
    native.genrule(
        name = name + "_generate",
        srcs = [src] + imports,
        outs = pb + grpc_pb,
        cmd = cmd,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = [base + ".pb.cc"],
        hdrs = [base + ".pb.h"],
        deps = deps + ["//third_party:protobuf"],
        visibility = visibility,
    )
    if grpc:
        native.cc_library(
            name = name + "_grpc",
            srcs = [base + ".grpc.pb.cc"],
            hdrs = [base + ".grpc.pb.h"],
            deps = [":" + name, "//third_party:grpc"],
            visibility = visibility,
        )
