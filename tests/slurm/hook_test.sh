#!/usr/bin/env bash
# memgate's real Slurm job_submit hook (Lua 5.1, as slurmctld links it) with
# Slurm stubbed, against hostile batch scripts: each must be decided, with
# the right verdict and message, in under 1 s of wall time and 64 MiB of
# peak memory on the slurmctld side (the hook's own process; memgate runs
# beside it).
#
#   tests/slurm/hook_test.sh PATH/TO/memgate HOOK_DIR [SCENARIOS.lua]
set -uo pipefail

memgate=$(readlink -f "${1:?usage: $0 PATH/TO/memgate HOOK_DIR}")
hooks=$(readlink -f "${2:?usage: $0 PATH/TO/memgate HOOK_DIR}")
scenarios=$(readlink -f "${3:-$(dirname "$0")/hook_scenarios.lua}")
lua=$(command -v lua5.1) || { echo "hook test: lua5.1 missing (scripts/setup.sh installs it)"; exit 1; }

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/memgate-hook.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$hooks/memgate_launch.lua" "$work/"
sed -e "s|memgate = \"/usr/local/bin/memgate\"|memgate = \"${memgate}\"|" \
    -e "s|-- a100 = \"a100-40gb\",|a100 = \"a100-40gb\",|" \
    -e "s|-- a100_40g = \"a100-40gb\",|a100_80g = \"a100-80gb\",|" \
    -e "s|-- \\[\"1g.10gb\"\\]|[\"1g.10gb\"]|" \
    "$hooks/job_submit.lua" > "$work/job_submit.lua"
grep -q "$memgate" "$work/job_submit.lua" || { echo "hook test: could not configure the hook"; exit 1; }

# Page the memgate binary in before the clock starts: the first exec of a
# cold (and, under --config=asan, several times larger) binary cost 1.1 s
# more than the same scenario run second on CI's 2-core machine. That is
# disk, not work the hook does per script, which is what the limit bounds.
"$memgate" --help >/dev/null 2>&1

# The 1 s bound is the hook's in production, an optimised memgate; the plain
# `bazel test` run holds every scenario to it. Under --config=asan (which
# sets MEMGATE_SANITIZED) memgate and Lua's children run 2-4x slower, so
# that run holds them to 3 s: it is there to find memory errors, not to
# time them.
limit_ms=1000
[ -z "${MEMGATE_SANITIZED:-}" ] || limit_ms=3000

passed=0
failed=0
# $1 scenario, $2 expected verdict, $3 a fixed string the message must hold;
# the hook as configured in $hook_dir.
hook_dir=$work
expect() {
  local start end ms out verdict hwm
  start=$(date +%s%N)
  out=$(timeout 20 "$lua" "$scenarios" "$hook_dir" "$1" 2>&1)
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
  verdict=$(sed -n 's/^verdict=\([a-z]*\) .*/\1/p' <<< "$out")
  hwm=$(sed -n 's/.* hwm_kib=\([0-9]*\) .*/\1/p' <<< "$out")
  local why=""
  [ "$verdict" = "$2" ] || why="verdict '$verdict', expected '$2'"
  [ -z "$3" ] || grep -qF -- "$3" <<< "$out" || why="$why; message lacks '$3'"
  [ "$ms" -lt "$limit_ms" ] || why="$why; took ${ms} ms (limit ${limit_ms})"
  [ -n "$hwm" ] && [ "$hwm" -lt 65536 ] || why="$why; peak memory ${hwm:-?} KiB (limit 65536)"
  if [ -z "$why" ]; then
    echo "ok: $1 -> $2 in ${ms} ms, peak ${hwm} KiB"
    passed=$((passed + 1))
  else
    echo "FAIL: $1: ${why#; }"
    echo "    ${out:0:600}"
    failed=$((failed + 1))
  fi
}

# The MBS 4 launches: the paper's 58.33 GiB cell plus Megatron's dataloader
# attention mask (4 x 8192^2 bytes, 0.25 GiB), which they do not turn off,
# less the 2 B a unit of FFN width the paper counts beyond Megatron's fused
# SwiGLU (7 GiB on stage 0).
expect expansion_bomb refuse "longer than 262144 bytes after variable expansion"
expect script_4mb_fits admit ""
expect script_4mb_ooms refuse "REFUSE [RED] peak 51.58"
expect short_lines_4mb refuse "the batch script has more than 100000 lines"
expect arrays_on_one_line refuse "more than 1048576 bytes of commands after arrays or quoted strings on their lines"
expect quotes_on_a_launch_line refuse "a launch line holds more than 4096 quotes and backslashes"
expect script_over_limit refuse "batch script is larger than 4194304 bytes"
expect script_4mb_shift_words admit ""
expect long_line_ooms refuse "REFUSE [RED] peak 51.58"
expect long_line_fits admit ""
expect decoy refuse "REFUSE [RED] peak 51.58"
expect echoed_then_run admit ""
expect two_launches_on_one_line refuse "REFUSE [RED] peak 51.58"
expect decoy_below refuse "REFUSE [RED] peak 51.58"
expect plain admit ""
expect most_work_allowed admit ""
expect too_many_launches refuse "more than 64 Megatron launches"
expect too_many_substitutions refuse "more than 4096 variable substitutions"
expect too_many_variables refuse "more than 4096 variable assignments"
expect variables refuse "REFUSE [RED] peak 51.58"
expect logged admit ""
# The job's GPU type wins over its partition's (a100_80g in the partition of
# 40 GB cards: the 51.58 GiB launch fits); a MIG slice is sized as the site
# maps it, and refused where the site does not (unless no launch is ours).
expect typed_gpu admit ""
expect mig_sized refuse "of 9.50 GiB"
expect mig_unsized refuse "the job asks for MIG slices (gpu:3g.40gb)"
expect mig_not_megatron admit ""
expect gpu_type_huge refuse "MIG slices (gpu:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx)"
expect gpus_at_run_time admit ""
expect script_no_arguments admit ""
expect script_arguments refuse "REFUSE [RED] peak 51.58"
expect script_positional refuse "REFUSE [RED] peak 51.58"
expect script_positional_in_function refuse "the launch uses \$1 inside a shell function ('train() {')"
expect script_positional_after_function refuse "REFUSE [RED] peak 51.58"
expect script_positional_in_one_line_function refuse "the launch uses \$1 inside a shell function ('train() {"
expect script_arguments_unknown refuse "after pretrain_gpt.py is a shell expansion"
expect script_arguments_huge refuse "the batch script's arguments are longer than 262144 bytes"
expect script_shifted refuse "the launch uses the batch script's arguments (\$@) after the script moves them ('shift')"
expect script_shifted_positional refuse "(\$1) after the script moves them ('shift')"
expect script_set_arguments refuse "after the script moves them ('set -- --micro-batch-size 1')"
expect script_argument_loop admit ""
expect script_arguments_array refuse "REFUSE [RED] peak 51.58"
expect script_arguments_array_shifted refuse "the launch uses \${ARGS[@]}, an array the script builds from words decided when it runs (its arguments after a line moves them"
expect script_variable_hidden refuse "'\$EXTRA_ARGS' after --num-layers is a shell expansion"
expect vision_language refuse "pretrain_vlm.py: Megatron-LM's entry point for a vision-language model"
expect hidden_arguments refuse "'\$EXTRA_ARGS' after pretrain_gpt.py is a shell expansion"
expect array_read refuse "REFUSE [RED] peak 51.58"
expect megatron_example_fits admit ""
expect megatron_example_ooms refuse "REFUSE [RED] peak 51.58"
expect array_then_launch_on_one_line refuse "REFUSE [RED] peak 51.58"
expect array_computed refuse "the launch uses \${ARGS[@]}, an array the script computes (\$( ... ))"
expect array_after_and refuse "the launch uses \${EXTRA[@]}, an array the script sets after another command on its line"
expect array_name_huge refuse "the launch uses \${AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA..., an array the script appends to (AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...+=( ... )) without setting it first"
expect array_after_condition admit ""
expect switch_after_condition refuse "'\$SP' after pretrain_gpt.py is a shell expansion"
expect value_after_condition refuse "REFUSE [RED] peak 51.58"
expect string_args_fits admit ""
expect string_args_ooms refuse "REFUSE [RED] peak 51.58"
expect string_args_extended refuse "launch: '\$GPT_ARGS' after pretrain_gpt.py is a shell expansion"
expect string_args_one_line refuse "REFUSE [RED] peak 51.58"
expect string_unclosed refuse "a quoted assignment (GPT_ARGS=\" ... \") is longer than 262144 bytes"
expect array_appended refuse "REFUSE [RED] peak 51.58 GiB (stage 0) vs limit 32.00 GiB"
expect array_appended refuse "(the launch as the script runs it where it takes the branch of 'if [ \"\$BIG\" = 1 ]; then')"
expect array_appended_at_top refuse "REFUSE [RED] peak 51.58"
expect array_in_each_branch refuse "where it takes the branch of 'elif [ \"\$SIZE\" = big ]; then  # the big one')"
expect condition_decided_small admit ""
expect condition_decided_big refuse "REFUSE [RED] peak 51.58"
expect condition_on_script_argument_none admit ""
expect condition_on_script_argument_big refuse "REFUSE [RED] peak 51.58"
expect numeric_test_false admit ""
expect numeric_test_true refuse "REFUSE [RED] peak 51.58"
expect condition_value_from_a_branch refuse "where it takes the branch of 'if [[ \"\$SIZE\" == big ]] || [ -z \"\$SIZE\" ]; then')"
expect megatron_example_conditional admit ""
expect size_switch_small admit ""
expect size_switch_big refuse "REFUSE [RED] peak 51.58"
expect condition_on_a_te_switch refuse "where it takes the branch of 'if [ \"\$NVTE_FLASH_ATTN\" = 0 ]; then')"
expect array_in_branch_with_loop refuse "the launch uses \${EXTRA[@]}, an array the script sets under a condition ('if [ -n \"\$BIG\" ]; then') that holds a construct the hook does not follow ('for i in 1 2; do echo \$i; done')"
expect else_with_a_command refuse "the launch uses \${EXTRA[@]}, an array the script sets under a condition ('if [ -n \"\$BIG\" ]; then') that holds a construct the hook does not follow ('else echo small')"
expect heredoc_in_a_block refuse "(the launch as the script runs it where it takes the branch of 'if [ -n \"\$X\" ]; then')"
expect heredoc_of_unknown_end_in_a_block refuse "an array the script sets under a condition ('if [ -n \"\$X\" ]; then') that holds a construct the hook does not follow ('cat > notes.txt <<\"\$END\"')"
expect and_or_lines refuse "REFUSE [RED] peak 51.58"
expect and_ending_its_line refuse "the launch uses \${ARGS[@]}, an array the script sets after its first condition or loop ('[ -n \"\$BIG\" ] && # \"big\"'), perhaps under it"
expect heredoc_body_is_text refuse "the launch uses \${ARGS[@]}, an array the script sets otherwise than in one NAME=( ... ) line"
expect heredoc_launch_checked refuse "REFUSE [RED] peak 51.58"
expect string_spanning_lines_is_text refuse "the launch uses \${ARGS[@]}, an array the script sets otherwise than in one NAME=( ... ) line"
expect quotes_that_close refuse "REFUSE [RED] peak 51.58"
expect quotes_4mb refuse "the batch script holds more than 1048576 quotes and backslashes"
expect variants_too_many refuse "the launch uses arrays or variables (A1, A2, A3, A4, A5) whose values after the script's conditions combine in more than 16 ways"
expect elif_chain_over_many_arrays refuse "more than 100000 arrays recorded or restored where branches of the script's conditions end"
expect keywords_4mb_in_a_block admit ""
expect array_element_set refuse "the launch uses \${ARGS[@]}, an array the script sets otherwise than in one NAME=( ... ) line"
expect array_elements_unset refuse "the launch uses \${ARGS[@]}, an array the script sets otherwise than in one NAME=( ... ) line"
expect name_reference refuse "the script declares a name reference ('declare -n REF=ARGS')"
expect local_beside_a_test admit ""
expect arrays_built_from_arrays refuse "the script's arrays hold more than 4194304 bytes of words"
expect quoted_value_with_operator refuse "REFUSE [RED] peak 51.58"
expect operator_glued_in_one_line_loop refuse "REFUSE [RED] peak 51.58"
expect variable_with_operator refuse "REFUSE [RED] peak 51.58"
expect launch_in_bash_c refuse "REFUSE [RED] peak 51.58"
expect escaped_dollar refuse "--micro-batch-size: must be a whole number (got '\$MBS')"
expect script_arguments_with_operator refuse "REFUSE [RED] peak 51.58"
expect variable_under_condition refuse "(the launch as the script runs it where it takes no branch of 'if [ \"\$SMALL\" = 1 ]; then')"
expect variable_in_argument_loop refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_after_and refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_computed_later refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_set_by_launch_loop refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_set_after_launch_in_loop refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_doubled_after_launch refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_set_between_function_calls refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect default_set_after_launch_in_loop refuse "--micro-batch-size: must be a whole number (got '\${MBS:-1}'): a shell expansion"
expect variable_sourced_after_launch_in_loop refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect array_set_after_launch_in_loop refuse "the launch uses \${ARGS[@]}, an array the script changes after it ('ARGS=(--micro-batch-size 4)'), and a loop or a function may run the launch again"
expect arguments_shifted_after_launch_in_loop refuse "the launch uses the batch script's arguments (\$1), which the script moves after it ('shift')"
expect arguments_shifted_on_launch_line refuse "the launch uses the batch script's arguments (\$1), which the script moves after it ('while [ \$# -gt 0 ]; do torchrun"
expect te_set_after_launch_in_loop refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect loop_launches_then_4mb_assignments admit ""
expect variable_set_after_launch_at_top admit ""
expect variable_kept_after_launch_in_loop admit ""
expect variable_in_environment refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_before_source refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_before_dot_after_and refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect variable_before_find_dot refuse "REFUSE [RED] peak 51.58"
expect variable_after_source refuse "REFUSE [RED] peak 51.58"
expect variable_before_export_of_a_file refuse "--micro-batch-size: must be a whole number (got '\$MBS'): a shell expansion whose value is decided when the command runs"
expect array_before_source refuse "the launch uses \${ARGS[@]}, an array the script sets before '. ./config.sh', which may set it again"
expect variable_set_twice_alike refuse "REFUSE [RED] peak 51.58"
expect default_from_environment refuse "REFUSE [RED] peak 51.58"
expect default_without_environment admit ""
expect default_in_launch refuse "REFUSE [RED] peak 51.58"
expect default_after_unset admit ""
expect default_without_job_environment refuse "--micro-batch-size: must be a whole number (got '\${MBS:-1}'): a shell expansion"
expect variable_before_comment refuse "REFUSE [RED] peak 51.58"
expect te_under_condition refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect te_environment_then_condition refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect te_set_twice refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect array_unclosed refuse "an array assignment (ARGS=( ... )) is longer than 262144 bytes"
expect assignments_4mb admit ""
expect assignment_names_huge admit ""
expect read_words_many admit ""
expect read_words_too_many refuse "more than 65536 names set in forms the hook cannot follow"
expect moe_release refuse "REFUSE [YELLOW] peak 32.10"
expect fork_argument admit ""
# The fitting launch under TransformerEngine's unfused attention
# (NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 exported, or in the job's
# environment): 8 heads a rank x 8192^2 scores on 16 layers, 58.33 GiB.
expect te_exported refuse "fits with TransformerEngine's fused attention"
expect te_exported_after refuse "REFUSE [RED] peak 58.33"
expect te_not_exported admit ""
expect te_from_variable refuse "REFUSE [RED] peak 58.33"
expect te_default_from_environment refuse "REFUSE [RED] peak 58.33"
expect te_default_without_environment admit ""
expect te_computed refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect te_quoted refuse "REFUSE [RED] peak 58.33"
expect te_unset admit ""
expect te_job_environment refuse "REFUSE [RED] peak 58.33"
# With NVTE_MASKED_SOFTMAX_FUSION=0 too: an fp32 copy of the scores
# (4 B, 2 GiB a layer) on 16 layers and 2 micro-batches in flight.
expect te_softmax_exported refuse "REFUSE [RED] peak 122.33"
expect te_softmax_job_environment refuse "REFUSE [RED] peak 122.33"
expect te_backward_override refuse "NVTE_BACKWARD_OVERRIDE=high_precision (the launch's environment): the fp8 GEMMs keep their 16-bit inputs"
expect te_job_environment_overridden refuse "NVTE_FUSED_ATTN=? (the launch's environment): not a whole number (TransformerEngine reads it with int(); 0 turns it off); the batch script sets it in a way its hook cannot read as one value"
expect te_job_environment_odd refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect te_job_environment_huge refuse "NVTE_UNFUSED_ATTN=? (the launch's environment): not a whole number"
expect te_job_environment_blanks refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect te_export_blanks refuse "NVTE_FLASH_ATTN=? (the launch's environment): not a whole number"
expect script_shifted_blanks refuse "after the script moves them ('shift')"
expect gpu_type_digits admit ""

# $1 a directory name, $2 a site setting as it reads by default, $3 as
# this site sets it: the hook so configured in $work/$1, as $hook_dir.
site() {
  hook_dir="$work/$1"
  mkdir -p "$hook_dir"
  cp "$work/memgate_launch.lua" "$hook_dir/"
  sed -e "s|  $2|  $3|" "$work/job_submit.lua" > "$hook_dir/job_submit.lua"
  grep -qF "  $3" "$hook_dir/job_submit.lua" || { echo "hook test: could not set $3"; exit 1; }
}

# A site that names its Megatron-Core release: the hook passes it to
# memgate, and the MoE launch is estimated as that release runs it.
site release 'megatron_core = "",' 'megatron_core = "0.13.0",'
expect moe_release admit ""
expect decoy refuse "REFUSE [RED] peak 51.58"  # a dense launch: the release changes nothing

# A site that refuses what memgate has not reviewed: the fork's argument
# makes the launch invalid, which on_invalid ("refuse") refuses, naming it.
site strict 'on_unreviewed = "admit",' 'on_unreviewed = "refuse",'
expect fork_argument refuse "--my-fork-offload-experts: not an argument of Megatron-LM"
expect decoy refuse "REFUSE [RED] peak 51.58"  # reviewed arguments only: judged as before

# A site that lets through what memgate cannot read: the moved arguments
# are logged and admitted, as an invalid launch is under this policy.
site lenient 'on_invalid = "refuse",' 'on_invalid = "admit",'
expect script_shifted admit ""
expect decoy refuse "REFUSE [RED] peak 51.58"  # readable launches: judged as before

# A memgate that runs past the hook's time limit without a server (here
# one that only sleeps: memgate's own work on a script is bounded far
# below the limit) is the launches' doing, not a service that did not
# answer: refused as an unreadable launch, even where the site admits
# when memgate is unavailable.
site slow 'on_unavailable = "refuse",' 'on_unavailable = "admit",'
printf '#!/bin/sh\nexec sleep 30\n' > "$work/slow_memgate"
chmod +x "$work/slow_memgate"
sed -i -e "s|memgate = \"${memgate}\"|memgate = \"$work/slow_memgate\"|" \
    -e "s|timeout_seconds = 2,|timeout_seconds = 0,|" "$hook_dir/job_submit.lua"
grep -qF "$work/slow_memgate" "$hook_dir/job_submit.lua" || { echo "hook test: could not set the slow memgate"; exit 1; }
limit_ms=3000
expect decoy refuse "memgate did not finish checking the script's 2 launch(es) within 1 s"

# $1 what a checker checks; the rest, the checker (its output its summary).
run_check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then
    echo "ok: $out"
    passed=$((passed + 1))
  else
    echo "FAIL: $what: $out"
    failed=$((failed + 1))
  fi
}
# Random scripts of the shell the hook reads: its own errors only.
run_check "random fragments" timeout 60 "$lua" \
  "$(dirname "$scenarios")/hook_fragments_fuzz.lua" "$work" 1 20000
# The hook's `if` blocks and arrays against bash itself: every launch
# bash runs, whatever the job's environment decides, is one it checks.
run_check "branches against bash" timeout 120 bash \
  "$(dirname "$scenarios")/hook_branches_differential.sh" "$work" 1 3000

# Every expectation ran: a line of this script that bash could not run
# (a bad substitution in its message) would otherwise pass unseen.
expected=$(grep -c '^expect ' "$0")
if [ $((passed + failed)) -lt "$expected" ]; then
  echo "FAIL: $((passed + failed)) results for $expected expectations"
  failed=$((failed + 1))
fi

echo "hook test: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
