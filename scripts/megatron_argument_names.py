#!/usr/bin/env python3
"""Prints readers/megatron_argument_names.inc: every argument name a
Megatron-LM revision's command line accepts, so that memgate can name the
ones a launch gives that it does not know (a newer Megatron's, a fork's).

Megatron builds its parser from two sources (megatron/training/
arguments.py): literal add_argument('--name', ...) calls, and groups
generated from config dataclasses (argument_utils.py ArgumentGroupFactory:
a field becomes --field-name; a bool field true by default becomes
--no-field-name and --disable-field-name; argparse_meta arg_names rename).
Fields of every dataclass the parser is built from, inherited ones
included, are listed, less those a factory call excludes (exclude=[...]:
fields with no command-line argument, such as
activation_func_fp8_input_store, which a launch cannot give); a few more
names than Megatron accepts only means a few fewer notes.

Usage (offline, against a fetched snapshot):
  scripts/megatron_argument_names.py --git-dir /path/to/Megatron-LM.git \
      --rev d98e8a6 > readers/megatron_argument_names.inc
the arguments a release from core 0.12.0 on accepted that the revision no
longer does (readers/megatron_arguments_removed.inc):
  scripts/megatron_argument_names.py --git-dir /path/to/Megatron-LM.git \
      --rev d98e8a6 --removed-since core_v0.12.0,core_v0.12.3,\
core_v0.13.1,core_v0.14.0,core_v0.15.3,core_v0.16.1,core_v0.17.1,\
core_v0.18.2,core_v0.19.0 > readers/megatron_arguments_removed.inc
the arguments that take no value, and those that take more than one, of
the revision and the releases from core 0.12.0 on
(readers/megatron_argument_switches.inc, megatron_argument_lists.inc):
  scripts/megatron_argument_names.py --git-dir /path/to/Megatron-LM.git \
      --rev d98e8a6 --arity switch --releases core_v0.12.0,core_v0.12.3,\
core_v0.13.1,core_v0.14.0,core_v0.15.3,core_v0.16.1,core_v0.17.1,\
core_v0.18.2,core_v0.19.0 > readers/megatron_argument_switches.inc
  (the same with --arity many > readers/megatron_argument_lists.inc)
and the arguments only Megatron-LM after core 0.12.0 accepts (the refs
without ADLR/megatron-lm!2668: core 0.12.0 and the older release branches,
core_r0.12.0 before its cherry-pick d5d00fdc87, the 25.04-alpha branch,
main before 2659630721):
  scripts/megatron_argument_names.py --git-dir /path/to/Megatron-LM.git \
      --rev d98e8a6 --absent-from heads/core_r0.10.0,heads/core_r0.11.0,\
core_v0.12.0,d5d00fdc87^,25.04-alpha,2659630721^ \
      > readers/megatron_arguments_after_core_0_12_0.inc
"""

import argparse
import re
import subprocess
import sys

# Config dataclasses the parser is built from, by file (arguments.py's
# ArgumentGroupFactory calls, and TransformerConfig's parent).
DATACLASS_FILES = {
    "megatron/core/model_parallel_config.py": ["ModelParallelConfig"],
    "megatron/core/transformer/transformer_config.py": ["TransformerConfig"],
    "megatron/training/config/training_config.py": None,  # every class
    "megatron/training/config/common_config.py": None,
    "megatron/training/config/resilience_config.py": None,
    "megatron/core/fault_injector.py": ["FaultInjectorConfig"],
}
LITERAL_FILES = ["megatron/training/arguments.py", "pretrain_gpt.py"]


def show(git_dir, rev, path):
    """The file at rev, or "" where rev has no such file (older revisions
    built the parser from arguments.py alone; listing a dataclass an old
    parser did not read only makes the older set larger)."""
    result = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{rev}:{path}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        if "does not exist" in result.stderr or "exists on disk" in result.stderr:
            return ""
        result.check_returncode()
    return result.stdout


# A class whose fields reach the parser through a subclass's factory, and
# so take that factory's exclusions (TransformerConfig inherits
# ModelParallelConfig's fields).
FACTORY_OF_PARENT = {"ModelParallelConfig": "TransformerConfig"}


def excluded_fields(arguments_source):
    """Fields each ArgumentGroupFactory(Class, exclude=...) call of
    arguments.py leaves off the command line ("no CLI argument exists for
    these", callables, fields with another spelling), by class. The list is
    literal or a variable assigned a literal list before the call."""
    out = {}
    call = re.compile(r"ArgumentGroupFactory\(\s*(\w+)\s*"
                      r"(?:,\s*exclude\s*=\s*(\[[^\]]*\]|\w+))?\s*\)")
    for m in call.finditer(arguments_source):
        cls, exclude = m.group(1), m.group(2) or "[]"
        if not exclude.startswith("["):
            assigned = list(re.finditer(
                r"^\s*" + exclude + r"\s*=\s*(\[[^\]]*\])",
                arguments_source[:m.start()], re.M))
            exclude = assigned[-1].group(1) if assigned else "[]"
        out.setdefault(cls, set()).update(
            re.findall(r"""['"](\w+)['"]""", exclude))
    return out


def argument_names(git_dir, rev):
    names = set()
    for path in LITERAL_FILES:
        names.update(re.findall(r"""['"]--([A-Za-z0-9][A-Za-z0-9_-]*)['"]""",
                                show(git_dir, rev, path)))
    excluded = excluded_fields(show(git_dir, rev, LITERAL_FILES[0]))
    for path, classes in DATACLASS_FILES.items():
        for name, body in class_bodies(show(git_dir, rev, path), classes):
            skip = excluded.get(FACTORY_OF_PARENT.get(name, name), set())
            names.update(dataclass_names(body, skip))
    return {n.replace("_", "-") for n in names
            if re.match(r"[a-z0-9]", n.replace("_", "-"))}


def add_argument_calls(source):
    """The text of every add_argument(...) call of source, up to its
    closing parenthesis (strings skipped)."""
    for m in re.finditer(r"add_argument\(", source):
        depth, i, quote = 1, m.end(), None
        while i < len(source) and depth > 0:
            c = source[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        yield source[m.end():i - 1]


SWITCH_ACTIONS = ("store_true", "store_false", "store_const", "count")


def arities(git_dir, rev):
    """Every argument name's arity as the revision's parser takes it:
    "switch" (no value: a literal call's store_true / store_false /
    store_const / count action, a dataclass's bool field, which
    ArgumentGroupFactory gives store_true, or store_false as --no- /
    --disable-), "many" (nargs + or * or a count, a dataclass's list
    field) or "one". A name given two arities takes the widest: one over
    switch, many over both."""
    rank = {"switch": 0, "one": 1, "many": 2}
    out = {}

    def add(name, arity):
        name = name.replace("_", "-")
        if rank[arity] >= rank[out.get(name, "switch")]:
            out[name] = arity

    for path in LITERAL_FILES:
        for call in add_argument_calls(show(git_dir, rev, path)):
            names = re.findall(r"""['"]--([A-Za-z0-9][A-Za-z0-9_-]*)['"]""",
                               call)
            action = re.search(r"""action\s*=\s*['"](\w+)['"]""", call)
            nargs = re.search(r"""nargs\s*=\s*['"]?([^'",)\s]+)""", call)
            if action and action.group(1) in SWITCH_ACTIONS:
                arity = "switch"
            elif nargs and nargs.group(1) not in ("1", "?"):
                arity = "many"
            else:
                arity = "one"
            for n in names:
                add(n, arity)
    arguments_source = show(git_dir, rev, LITERAL_FILES[0])
    if "ArgumentGroupFactory" not in arguments_source:
        return out  # an older parser: literal calls only
    excluded = excluded_fields(arguments_source)
    for path, classes in DATACLASS_FILES.items():
        for name, body in class_bodies(show(git_dir, rev, path), classes):
            skip = excluded.get(FACTORY_OF_PARENT.get(name, name), set())
            for dashed, arity in dataclass_fields(body, skip):
                add(dashed, arity)
    return out


def release_argument_names(git_dir, rev):
    """The names a release's parser accepts: its literal add_argument calls,
    and its config dataclasses' fields only where its arguments.py builds
    groups from them (ArgumentGroupFactory; an older parser read none)."""
    if "ArgumentGroupFactory" in show(git_dir, rev, LITERAL_FILES[0]):
        return argument_names(git_dir, rev)
    names = set()
    for path in LITERAL_FILES:
        names.update(re.findall(r"""['"]--([A-Za-z0-9][A-Za-z0-9_-]*)['"]""",
                                show(git_dir, rev, path)))
    return {n.replace("_", "-") for n in names
            if re.match(r"[a-z0-9]", n.replace("_", "-"))}


def quoted_option_literals(git_dir, rev):
    """Every quoted '--name' in any Python file at rev: a superset of what
    its parser accepts (an option an older parser added from another file,
    which a later one moved into arguments.py, is not new)."""
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "grep", "-h", "-o", "-E",
         r"""['"]--[A-Za-z0-9][A-Za-z0-9_-]*['"]""", rev, "--", "*.py"],
        check=True, capture_output=True, text=True).stdout
    return {line[3:-1].replace("_", "-") for line in out.split()}


def short(git_dir, rev):
    return subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", "--short", rev],
        check=True, capture_output=True, text=True).stdout.strip()


def class_bodies(source, names):
    starts = [(m.group(1), m.start())
              for m in re.finditer(r"^class (\w+)", source, re.M)]
    for i, (name, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(source)
        if names is None or name in names:
            yield name, source[start:end]


def dataclass_fields(body, excluded=frozenset()):
    """(dashed name, arity) of every argument the fields of a dataclass
    body give: a bool field is a switch unless its argparse_meta sets a
    type, nargs or action; a list field, or one whose argparse_meta sets
    nargs, takes many values; any other one."""
    fields = list(re.finditer(
        r"^    ([a-z_][a-z0-9_]*)\s*:\s*([^\n=]+?)\s*(?:=\s*([^\n]*))?$",
        body, re.M))
    for i, m in enumerate(fields):
        name, annotation, default = m.group(1), m.group(2), m.group(3) or ""
        if name in excluded:
            continue
        end = fields[i + 1].start() if i + 1 < len(fields) else len(body)
        text = body[m.start():end]
        kind = annotation.strip()
        if (kind in ("bool", "Optional[bool]", "bool | None") and
                not re.search(r'"(type|nargs|action)"\s*:', text)):
            arity = "switch"
        elif (re.search(r"\b(list|List)\[", kind) or
              re.search(r'"nargs"\s*:', text)):
            arity = "many"
        else:
            arity = "one"
        renamed = re.search(r'"arg_names"\s*:\s*\[([^\]]*)\]', text)
        if renamed:
            for dashed in re.findall(r'"--([A-Za-z0-9_-]+)"', renamed.group(1)):
                yield dashed, arity
            continue
        dashed = name.replace("_", "-")
        yield dashed, arity
        if kind == "bool" and default.startswith("True"):
            yield "no-" + dashed, arity
            yield "disable-" + dashed, arity


def dataclass_names(body, excluded=frozenset()):
    for dashed, _ in dataclass_fields(body, excluded):
        yield dashed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument(
        "--absent-from", default="",
        help="comma-separated revisions: print only the names none of them "
             "accepts (arguments added after all of them)")
    parser.add_argument(
        "--removed-since", default="",
        help="comma-separated release revisions: print only the names one "
             "of them accepts and --rev no longer does")
    parser.add_argument(
        "--arity", choices=["switch", "many"],
        help="print the revision's arguments that take no value (switch) "
             "or more than one (many)")
    parser.add_argument(
        "--releases", default="",
        help="with --arity: comma-separated release revisions whose "
             "arguments count too (an argument the revision no longer has "
             "takes its arity from them; one whose arity differs takes the "
             "widest)")
    flags = parser.parse_args()
    if flags.arity:
        revs = [flags.rev] + [r for r in flags.releases.split(",") if r]
        rank = {"switch": 0, "one": 1, "many": 2}
        merged = {}
        for rev in revs:
            for name, arity in arities(flags.git_dir, rev).items():
                if rank[arity] >= rank[merged.get(name, "switch")]:
                    merged[name] = arity
        print(f"// Generated by scripts/megatron_argument_names.py "
              f"--arity {flags.arity} from Megatron-LM "
              + ", ".join(f"{r} ({short(flags.git_dir, r)})" if r != flags.rev
                          else short(flags.git_dir, r) for r in revs)
              + "; do not edit.")
        for name, arity in sorted(merged.items()):
            if arity == flags.arity:
                print(f'"{name}",')
        return 0
    names = argument_names(flags.git_dir, flags.rev)
    releases = [r for r in flags.removed_since.split(",") if r]
    if releases:
        removed = set()
        for rev in releases:
            removed |= release_argument_names(flags.git_dir, rev)
        removed -= names
        print(f"// Generated by scripts/megatron_argument_names.py: accepted "
              f"by a Megatron-LM release of "
              + ", ".join(f"{r} ({short(flags.git_dir, r)})" for r in releases)
              + f", no longer by {short(flags.git_dir, flags.rev)}; "
              f"do not edit.")
        for name in sorted(removed):
            print(f'"{name}",')
        return 0
    older = [r for r in flags.absent_from.split(",") if r]
    for rev in older:
        names -= argument_names(flags.git_dir, rev)
        names -= quoted_option_literals(flags.git_dir, rev)
    absent = (" absent from " + ", ".join(
        f"{r} ({short(flags.git_dir, r)})" for r in older)) if older else ""
    print(f"// Generated by scripts/megatron_argument_names.py from "
          f"Megatron-LM {short(flags.git_dir, flags.rev)}{absent}; "
          f"do not edit.")
    for name in sorted(names):
        print(f'"{name}",')
    return 0


if __name__ == "__main__":
    sys.exit(main())
