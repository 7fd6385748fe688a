"""memgate_job_test: fail `bazel test` when a training job would not fit.

A team keeps its training jobs (memgate.v1.Job files in JSON or text
format, or launch scripts with a Megatron-LM command) in its repository;

    load("@memgate//client:defs.bzl", "memgate_job_test")

    memgate_job_test(
        name = "jobs_fit_test",
        jobs = glob(["jobs/*.json", "launch/*.sh"]),
        gpu = "h100-80gb",
    )

makes a test that runs `memgate check` (embedded: no service needed) on
each, and fails naming every job memgate would refuse and why, so a config
change that would OOM is caught before it reaches the cluster.
"""

_MEMGATE = Label("//client:memgate")
_RUNNER = Label("//client:job_test_runner.sh")

def memgate_job_test(name, jobs, gpu = None, flags = [], **kwargs):
    """A test that fails when memgate refuses any of `jobs`.

    Args:
      name: the test's name.
      jobs: job files (.json/.textproto/.txtpb/.pbtxt) and launch scripts.
      gpu: catalog GPU for launch scripts (a Job file names its own).
      flags: more `memgate check` flags, e.g. ["--threshold=0.75"].
      **kwargs: passed to the sh_test (size, tags, ...).
    """
    native.sh_test(
        name = name,
        srcs = [_RUNNER],
        data = jobs + [_MEMGATE],
        args = ["$(rootpath %s)" % _MEMGATE, gpu or ""] + flags + ["--"] +
               ["$(rootpath %s)" % job for job in jobs],
        **kwargs
    )
