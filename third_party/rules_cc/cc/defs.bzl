"""Re-exports Bazel 4.2.3's native C++ rules under rules_cc's names.

Debian's rules_cc package targets newer Bazel; this keeps the build offline.
"""

cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_proto_library = native.cc_proto_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
objc_library = native.objc_library
