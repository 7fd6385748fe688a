"""Re-exports Bazel 4.2.3's native Java rules under rules_java's names.

memgate has no Java; Bazel's own tool repositories load these names.
"""

java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_runtime = native.java_runtime
java_test = native.java_test
java_toolchain = native.java_toolchain
