# The tools' bad invocations (issue 12): each must exit with the documented status (docs/tools.md:
# 0 ok, 1 the run failed, 2 bad usage) and say which value is wrong and why. Included from
# tools/CMakeLists.txt; check_output.sh EXIT PATTERN... -- COMMAND (patterns: grep -E).
if(ACCL_BUILD_TESTS)
  set(_usage_check sh ${CMAKE_CURRENT_SOURCE_DIR}/accl-topo/check_output.sh)
  set(_usage_tests "")
  function(accl_usage_test name code)
    add_test(NAME ${name} COMMAND ${_usage_check} ${code} ${ARGN})
    set(_usage_tests ${_usage_tests} ${name} PARENT_SCOPE)
  endfunction()

  # accl-tune
  accl_usage_test(accl_tune.usage.ranks_zero 2 "bad value '0' for --ranks: must be at least 1" --
                  $<TARGET_FILE:accl-tune> table --ranks 0)
  accl_usage_test(accl_tune.usage.ranks_not_multiple_of_nodes 2
                  "--ranks 16 is not a multiple of --nodes 3: every node must run the same number of ranks" --
                  $<TARGET_FILE:accl-tune> table --topo-file ${PROJECT_SOURCE_DIR}/tests/data/dgx_h100.xml
                  --ranks 16 --nodes 3)
  accl_usage_test(accl_tune.usage.more_nodes_than_ranks 2 "--nodes 4 with --ranks 2: more nodes than ranks" --
                  $<TARGET_FILE:accl-tune> table --ranks 2 --nodes 4)
  accl_usage_test(accl_tune.usage.bad_collective 2 "bad value 'allreduc' for --coll: 'allreduc' is not a collective" --
                  $<TARGET_FILE:accl-tune> table --coll allreduc)
  accl_usage_test(accl_tune.usage.calibrate_rank_count 2 "bad value '2,0' for -n: rank count '0' must be at least 1" --
                  $<TARGET_FILE:accl-tune> calibrate -n 2,0)
  accl_usage_test(accl_tune.usage.unknown_command 2 "unknown command 'tabel'" -- $<TARGET_FILE:accl-tune> tabel)
  # accl-comm-demo
  accl_usage_test(accl_comm_demo.usage.zero_ranks 2 "bad value '0' for -N: must be at least 1" --
                  $<TARGET_FILE:accl-comm-demo> -N 0)
  accl_usage_test(accl_comm_demo.usage.not_a_number 2 "bad value 'four' for -g: not an integer" --
                  $<TARGET_FILE:accl-comm-demo> -g four)
  accl_usage_test(accl_comm_demo.usage.missing_value 2 "-N needs a rank count" -- $<TARGET_FILE:accl-comm-demo> -N)
  # accl-info
  accl_usage_test(accl_info.usage.unknown_option 2 "unknown option '--envv'" -- $<TARGET_FILE:accl-info> --envv)
  # accl-ras
  accl_usage_test(accl_ras.usage.bad_port 2 "bad value '70000' for -p: must be at most 65535" --
                  $<TARGET_FILE:accl-ras> -p 70000)
  accl_usage_test(accl_ras.usage.bad_scan 2 "bad value 'x' for --scan: not an integer" --
                  $<TARGET_FILE:accl-ras> --scan x)
  # accl-topo
  accl_usage_test(accl_topo.usage.two_formats 2 "--xml and --dot: choose one of --text, --xml, --dot" --
                  $<TARGET_FILE:accl-topo> --xml --dot)
  accl_usage_test(accl_topo.usage.unknown_option 2 "unknown option '--json'" -- $<TARGET_FILE:accl-topo> --json)
  set_tests_properties(${_usage_tests} PROPERTIES LABELS unit TIMEOUT 60)

  # accl-info --env: unset settings read "unset (...)", never their marker defaults; NCCL_ALGO's help
  # names accl's OneShot.
  add_test(NAME accl_info.env_unset
           COMMAND ${_usage_check} 0 "^NCCL_BUFFSIZE +default +unset \\(NCCL default: 4 MiB"
                   "^NCCL_COMM_BLOCKING +default +unset \\(ncclConfig_t decides\\)"
                   "^ACCL_HOST_SPIN +default +unset \\(auto: " "^NCCL_ALGO .*OneShot \\(accl" --
                   $<TARGET_FILE:accl-info> --env)
  add_test(NAME accl_info.env_no_marker_values
           COMMAND sh -c "! \"$0\" --env | grep -E ' default +(-2147483648|-1|-2) '" $<TARGET_FILE:accl-info>)
  set_tests_properties(accl_info.env_unset accl_info.env_no_marker_values PROPERTIES LABELS unit TIMEOUT 60)
endif()
