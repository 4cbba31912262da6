# Integration tests of the real `topotune` binary, run by ctest as
#   cmake -DTOPOTUNE=<binary> -DEXAMPLES=<deploy/examples> -DWORK_DIR=<dir> -DCASE=<name> -P cli_test.cmake
# Each CASE runs the binary, then checks its exit status, its output and its
# messages. CMake is the interpreter because it is always present where the
# project builds, and string(JSON) parses the JSON output without extra tools.

cmake_minimum_required(VERSION 3.25)

foreach(var TOPOTUNE EXAMPLES WORK_DIR CASE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "cli_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs topotune with ARGN; sets rc, out and err in the caller.
macro(run_topotune)
  execute_process(COMMAND "${TOPOTUNE}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(REPLACE ";" " " last_cmd "topotune ${ARGN}")
endmacro()

function(fail what)
  message(FATAL_ERROR "FAIL [${last_cmd}]: ${what}\n--- exit status: ${rc}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endfunction()

function(expect_rc expected)
  if(NOT "${rc}" STREQUAL "${expected}")
    fail("expected exit status ${expected}, got ${rc}")
  endif()
endfunction()

# expect_match(<stdout|stderr> <regex>...)
function(expect_match stream)
  if(stream STREQUAL "stdout")
    set(text "${out}")
  else()
    set(text "${err}")
  endif()
  foreach(re IN LISTS ARGN)
    if(NOT text MATCHES "${re}")
      fail("${stream} does not match the regex '${re}'")
    endif()
  endforeach()
endfunction()

function(expect_empty stream)
  if(stream STREQUAL "stdout" AND NOT out STREQUAL "")
    fail("stdout should be empty")
  elseif(stream STREQUAL "stderr" AND NOT err STREQUAL "")
    fail("stderr should be empty")
  endif()
endfunction()

# Parses the schedule JSON in `out` and checks its shape: exactly the keys of
# the format in order, one line, [src,dst] messages with ranks in range, no
# pair twice, [a,p,c,q] syncs in range. Sets in the caller:
#   json_ranks, json_phases, json_messages, json_syncs, json_load, json_hosts
function(check_schedule_json collective algorithm)
  string(REGEX REPLACE "\n$" "" line "${out}")
  if(line MATCHES "\n")
    fail("the JSON is not a single line")
  endif()
  set(key_order_re
    "^{\"collective\":\"${collective}\",\"algorithm\":\"${algorithm}\",\"ranks\":\\[[^]]*\\],\"phases\":\\[.*\\],\"syncs\":\\[.*\\],\"bottleneck_load\":[0-9]+(,\"host_combined\":true)?(,\"receives_up_front\":true)?}$")
  if(NOT line MATCHES "${key_order_re}")
    fail("the JSON does not have the keys collective, algorithm, ranks, phases, syncs, bottleneck_load in this order")
  endif()
  # tree_scheduled's synchronisations leave at send completion (receives up front).
  set(optional_keys 0)
  if(line MATCHES "\"host_combined\":true[,}]")
    math(EXPR optional_keys "${optional_keys} + 1")
  endif()
  if(line MATCHES "\"receives_up_front\":true}$")
    math(EXPR optional_keys "${optional_keys} + 1")
  elseif(algorithm STREQUAL "tree_scheduled")
    fail("tree_scheduled's JSON does not end with \"receives_up_front\":true")
  endif()
  string(JSON type ERROR_VARIABLE jerr TYPE "${line}")
  if(jerr OR NOT type STREQUAL "OBJECT")
    fail("stdout is not a JSON object: ${jerr}")
  endif()
  string(JSON nkeys LENGTH "${line}")
  math(EXPR expected_keys "6 + ${optional_keys}")
  if(NOT nkeys EQUAL expected_keys)
    fail("the JSON object has ${nkeys} keys, expected ${expected_keys}")
  endif()

  string(JSON nranks LENGTH "${line}" ranks)
  set(hosts "")
  math(EXPR last_rank "${nranks} - 1")
  foreach(r RANGE 0 ${last_rank})
    string(JSON t TYPE "${line}" ranks ${r})
    if(NOT t STREQUAL "STRING")
      fail("ranks[${r}] is ${t}, expected a host name string")
    endif()
    string(JSON h GET "${line}" ranks ${r})
    list(APPEND hosts "${h}")
  endforeach()

  string(JSON nphases LENGTH "${line}" phases)
  set(total 0)
  set(pairs "")
  if(nphases GREATER 0)
    math(EXPR last_phase "${nphases} - 1")
    foreach(p RANGE 0 ${last_phase})
      string(JSON nmsg LENGTH "${line}" phases ${p})
      if(nmsg EQUAL 0)
        continue()
      endif()
      math(EXPR last_msg "${nmsg} - 1")
      foreach(k RANGE 0 ${last_msg})
        string(JSON len LENGTH "${line}" phases ${p} ${k})
        if(NOT len EQUAL 2)
          fail("phases[${p}][${k}] has ${len} elements, expected [src,dst]")
        endif()
        string(JSON src GET "${line}" phases ${p} ${k} 0)
        string(JSON dst GET "${line}" phases ${p} ${k} 1)
        if(NOT src MATCHES "^[0-9]+$" OR NOT dst MATCHES "^[0-9]+$" OR src GREATER_EQUAL nranks OR
           dst GREATER_EQUAL nranks)
          fail("phases[${p}][${k}] = [${src},${dst}] names a rank outside [0, ${nranks})")
        endif()
        list(APPEND pairs "${src}>${dst}")
        math(EXPR total "${total} + 1")
      endforeach()
    endforeach()
  endif()
  set(unique_pairs ${pairs})
  list(REMOVE_DUPLICATES unique_pairs)
  list(LENGTH unique_pairs nunique)
  if(NOT nunique EQUAL total)
    fail("some [src,dst] pair appears more than once (${nunique} distinct of ${total})")
  endif()

  string(JSON nsyncs LENGTH "${line}" syncs)
  if(nsyncs GREATER 0)
    math(EXPR last_sync "${nsyncs} - 1")
    foreach(k RANGE 0 ${last_sync})
      string(JSON len LENGTH "${line}" syncs ${k})
      if(NOT len EQUAL 4)
        fail("syncs[${k}] has ${len} elements, expected [from_rank,after_phase,to_rank,before_phase]")
      endif()
      string(JSON a GET "${line}" syncs ${k} 0)
      string(JSON pa GET "${line}" syncs ${k} 1)
      string(JSON c GET "${line}" syncs ${k} 2)
      string(JSON pc GET "${line}" syncs ${k} 3)
      if(a GREATER_EQUAL nranks OR c GREATER_EQUAL nranks OR pa GREATER_EQUAL nphases OR pc GREATER_EQUAL nphases)
        fail("syncs[${k}] = [${a},${pa},${c},${pc}] is out of range")
      endif()
    endforeach()
  endif()

  string(JSON load GET "${line}" bottleneck_load)
  set(json_ranks ${nranks} PARENT_SCOPE)
  set(json_phases ${nphases} PARENT_SCOPE)
  set(json_messages ${total} PARENT_SCOPE)
  set(json_syncs ${nsyncs} PARENT_SCOPE)
  set(json_load ${load} PARENT_SCOPE)
  set(json_hosts "${hosts}" PARENT_SCOPE)
endfunction()

function(expect_equal what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    fail("${what} is '${actual}', expected '${expected}'")
  endif()
endfunction()

set(fig1 "${EXAMPLES}/faraj-yuan-fig1.yaml")
set(two "${EXAMPLES}/two-switch-4x4.yaml")
set(three "${EXAMPLES}/three-level.yaml")
file(MAKE_DIRECTORY "${WORK_DIR}")

if(CASE STREQUAL "schedule_json_fig1")
  # Faraj-Yuan Figure 1: 6 hosts, bottleneck s0 -- s1 with 3 x 3 = 9 phases (Table 4), 6 x 5 = 30 messages.
  run_topotune(schedule --topology "${fig1}" --collective alltoall --algorithm tree_scheduled --format json)
  expect_rc(0)
  expect_empty(stderr)
  check_schedule_json(alltoall tree_scheduled)
  expect_equal("phases" "${json_phases}" 9)
  expect_equal("messages" "${json_messages}" 30)
  expect_equal("bottleneck_load" "${json_load}" 9)
  expect_equal("ranks" "${json_hosts}" "n0;n1;n2;n3;n4;n5")
  if(json_syncs EQUAL 0)
    fail("tree_scheduled without barriers needs synchronisations, the JSON has none")
  endif()

elseif(CASE STREQUAL "schedule_json_subset")
  # Two hosts on each switch: the inter-switch link carries 2 x 2 = 4 pairs each way.
  run_topotune(schedule --topology "${two}" --hosts h0,h1,h4,h5 --algorithm tree_scheduled --format json)
  expect_rc(0)
  check_schedule_json(alltoall tree_scheduled)
  expect_equal("ranks" "${json_hosts}" "h0;h1;h4;h5")
  expect_equal("phases" "${json_phases}" 4)
  expect_equal("messages" "${json_messages}" 12)
  expect_equal("bottleneck_load" "${json_load}" 4)

elseif(CASE STREQUAL "schedule_json_multirank")
  # h0 and h5 have 2 slots each; with h5:3 the host link of h5 carries 3 x 2 = 6 pairs.
  run_topotune(schedule --topology "${three}" --hosts h0,h5:3 --algorithm tree_scheduled --format json)
  expect_rc(0)
  check_schedule_json(alltoall tree_scheduled)
  expect_equal("ranks" "${json_hosts}" "h0;h0;h5;h5;h5")
  expect_equal("phases" "${json_phases}" 6)
  expect_equal("messages" "${json_messages}" 20)
  expect_equal("bottleneck_load" "${json_load}" 6)

elseif(CASE STREQUAL "schedule_json_other_algorithms")
  # Every alltoall algorithm of the registry covers all 8 x 7 pairs once.
  foreach(alg ring pairwise phased_barrier)
    run_topotune(schedule --topology "${two}" --algorithm ${alg} --format json)
    expect_rc(0)
    check_schedule_json(alltoall ${alg})
    expect_equal("${alg} messages" "${json_messages}" 56)
    expect_equal("${alg} bottleneck_load" "${json_load}" 16)
  endforeach()

elseif(CASE STREQUAL "schedule_capacity_default")
  # Without --algorithm, alltoall is capacity_scheduled: on 2 leaves x 16 hosts x 16 ranks (25G hosts, a 100G
  # inter-leaf link) it overruns no link and reaches 0.9 of the bound, where the ring overruns the inter-leaf
  # link 64-fold; its JSON carries [src, dst, blocks] messages and "host_combined":true.
  set(leaves "${EXAMPLES}/two-leaf-16x16.yaml")
  run_topotune(schedule --topology "${leaves}" --msize 64KiB)
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout
    "^# alltoall capacity_scheduled: 512 ranks on 32 hosts\n# host-combined: "
    "\nmodel \\(64KiB blocks, 20us per phase\\): modelled time [0-9.]+ ms, bound 343\.597 ms, fraction of the bound "
    "0\.9[0-9]+; no link overrun in any phase\n"
    "verifier: capacity-respecting yes \\(overrun \\(phase, link\\) pairs 0, [^\n]*; pattern complete: ok\n$")
  run_topotune(schedule --topology "${leaves}" --format json)
  expect_rc(0)
  if(NOT out MATCHES "^{\"collective\":\"alltoall\",\"algorithm\":\"capacity_scheduled\",.*\[[0-9]+,[0-9]+,[0-9]+\].*,\"host_combined\":true}\n$")
    fail("the JSON of capacity_scheduled lacks [src, dst, blocks] messages or \"host_combined\":true")
  endif()
  run_topotune(schedule --topology "${leaves}" --algorithm ring --no-verify)
  expect_rc(0)
  expect_match(stdout "\nmodel [^\n]*; 509 of 511 phases overrun a link \\(worst: 64x the speed of leaf[01] -- leaf[01] ")
  run_topotune(schedule --topology "${leaves}" --msize 0)
  expect_rc(2)
  expect_match(stderr "--msize: '0' is not a positive size")
  run_topotune(schedule --topology "${leaves}" --alpha 5parsecs)
  expect_rc(2)
  expect_match(stderr "--alpha: '5parsecs' is not a latency")

elseif(CASE STREQUAL "schedule_allgather_node_aware")
  # Without --algorithm, allgather is node_aware_ring: on 2 leaves x 16 hosts x 16 ranks, 31 phases of a host's 16
  # blocks (0.94 of the bound), where the rank-level switch-ordered ring needs 511 phases (0.50); the verifier
  # checks the block streams.
  run_topotune(schedule --collective allgather --topology "${EXAMPLES}/two-leaf-16x16.yaml")
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout
    "^# allgather node_aware_ring: 512 ranks on 32 hosts\n# host-combined: [^\n]*stream"
    "\nphases 31 \\| messages 992 \\| syncs 0 \\| [^\n]*\n"
    "model \\(64KiB blocks, 20us per phase\\): modelled time 11\\.022 ms, bound 10\\.402 ms, fraction of the bound "
    "0\\.944; no link overrun in any phase\n"
    "verifier: capacity-respecting yes [^\n]*; pattern complete: ok\n$")
  run_topotune(schedule --collective allgather --algorithm switch_ordered_ring --topology
    "${EXAMPLES}/two-leaf-16x16.yaml")
  expect_rc(0)
  expect_match(stdout "\nphases 511 [^\n]*\nmodel [^\n]*fraction of the bound 0\\.497;")

elseif(CASE STREQUAL "bound_link_capacities")
  # Every network link with its load and its capacity in messages per phase: the 100G inter-leaf link carries
  # 256 x 256 blocks per direction and four 25G messages at a time; a host link one.
  run_topotune(bound --topology "${EXAMPLES}/two-leaf-16x16.yaml")
  expect_rc(0)
  expect_match(stdout
    "\nlinks +all-to-all load [^\n]*\n  leaf0 -- leaf1 +100Gbps  load +65536  capacity +4  \\(343\.597 ms\\)\n"
    "  leaf0 -- n00 +25Gbps  load +7936  capacity +1  \\(")
  run_topotune(bound --topology "${EXAMPLES}/two-leaf-16x16.yaml" --json)
  expect_rc(0)
  expect_match(stdout "\"links\": \\[{\"link\": \"[^\"]+\", \"speed_bps\": [0-9.e+]+, \"load\": [0-9]+, \"capacity\": [0-9]+}")

elseif(CASE STREQUAL "schedule_table_fig1")
  run_topotune(schedule --topology "${fig1}" --collective alltoall --algorithm tree_scheduled --format table)
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout
    "\nphase  0 \\| [0-9]+->[0-9]+ "
    "\nphase  8 \\| "
    "\nphases 9 \\| messages 30 \\| syncs [1-9][0-9]* [^\n]*\\| bottleneck load 9\n"
    "\nverifier: contention-free yes \\(contention count 0[^\n]*: ok\n")
  if(out MATCHES "phase  9 ")
    fail("the table has more than 9 phases")
  endif()

elseif(CASE STREQUAL "schedule_table_contention")
  # The ring ignores the tree: on two switches its phases collide on s0 -- s1.
  run_topotune(schedule --topology "${two}" --algorithm ring)
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout "\nphases 7 \\| messages 56 " "\nverifier: contention-free no \\(contention count [1-9]")

elseif(CASE STREQUAL "topology_show_fig1")
  run_topotune(topology show "${fig1}")
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout
    "^ +link +load\ns0\n"
    "n0 \\[1 slot, rank 0\\] +100Mbps +5\n"
    "s1 +100Mbps +9  <== bottleneck\n"
    "s3 +100Mbps +8\n"
    "s2 +100Mbps +0\n"
    "faraj-yuan-fig1.yaml: 4 switches, 6 hosts, 6 ranks, bottleneck load 9 on s0 -- s1\n")
  string(REGEX MATCHALL "<== bottleneck" marks "${out}")
  list(LENGTH marks nmarks)
  expect_equal("number of bottleneck marks" "${nmarks}" 1)

elseif(CASE STREQUAL "topology_show_lag")
  # LAGs of 4 x 25 Gbit/s: shown with their members; a flow across asks one
  # member's speed, so the LAG (the contracted leaf0 -- leaf1 path) takes 4.
  run_topotune(topology show "${EXAMPLES}/two-leaf-lag.yaml" --ascii)
  expect_rc(0)
  expect_match(stdout "\\|-- leaf0 +100Gbps \\(4 x 25Gbps\\) +64  <== bottleneck\n")
  run_topotune(bound --topology "${EXAMPLES}/two-leaf-lag.yaml")
  expect_rc(0)
  expect_match(stdout "leaf0 -- leaf1 +100Gbps +load +64 +capacity +4 ")
elseif(CASE STREQUAL "topology_show_hosts")
  run_topotune(topology show "${two}" --hosts h0,h1:3,h4 --ascii)
  expect_rc(0)
  expect_match(stdout
    "^ +link +load\ns0\n\\|-- s1 +100Mbps +4\n"
    "\n\\|   \\|-- h4 \\[1 slot, rank 4\\] +100Mbps +4\n"
    "\n\\|   `-- h7 \\[1 slot, no ranks\\] +100Mbps +0\n"
    "\n\\|-- h0 \\[1 slot, rank 0\\] +100Mbps +4\n"
    "\n\\|-- h1 \\[1 slot, ranks 1-3\\] +100Mbps +6  <== bottleneck\n"
    "\n`-- h3 \\[1 slot, no ranks\\] +100Mbps +0\n"
    "8 hosts \\(3 with ranks\\), 5 ranks, bottleneck load 6 on h1 -- s0\n")
  if(out MATCHES "├|└|│")
    fail("--ascii output contains box-drawing characters")
  endif()

elseif(CASE STREQUAL "bound_two_switch")
  # 16 blocks of 64 KiB over 100 Mbit/s: 16 * 65536 * 8 / 1e8 s = 83.886 ms. Allgather: 7 blocks over a host link.
  run_topotune(bound --topology "${two}" --msize 64KiB)
  expect_rc(0)
  expect_empty(stderr)
  expect_match(stdout
    "message size +64KiB per block \\(65536 bytes\\)"
    "all-to-all +>= 83\\.886 ms +on link s0 -- s1 \\(100Mbps\\), 16 blocks per direction"
    "allgather +>= 36\\.700 ms +on link [a-z0-9]+ -- [a-z0-9]+ \\(100Mbps\\), 7 blocks per direction")

elseif(CASE STREQUAL "bound_json")
  # The same figures as bound_two_switch, for scripts.
  run_topotune(bound --topology "${two}" --msize 64KiB --json)
  expect_rc(0)
  expect_empty(stderr)
  string(JSON a2a_s GET "${out}" alltoall seconds)
  string(JSON a2a_link GET "${out}" alltoall link)
  string(JSON a2a_load GET "${out}" alltoall load)
  string(JSON ag_load GET "${out}" allgather load)
  string(JSON nprocs GET "${out}" nprocs)
  if(NOT a2a_s MATCHES "^0\\.083886" OR NOT a2a_link STREQUAL "s0 -- s1" OR NOT a2a_load EQUAL 16
     OR NOT ag_load EQUAL 7 OR NOT nprocs EQUAL 8)
    fail("bound --json: read ${a2a_s} s, '${a2a_link}', loads ${a2a_load} and ${ag_load}, ${nprocs} ranks")
  endif()

elseif(CASE STREQUAL "bound_msize_forms")
  # 4096 bytes and 4KiB are the same size; 1MiB is 256 times more.
  run_topotune(bound --topology "${two}" --msize 4096)
  expect_rc(0)
  expect_match(stdout "all-to-all +>= 5\\.243 ms ")
  run_topotune(bound --topology "${two}" --msize 4KiB)
  expect_rc(0)
  expect_match(stdout "all-to-all +>= 5\\.243 ms ")
  run_topotune(bound --topology "${two}" --msize 1MiB)
  expect_rc(0)
  expect_match(stdout "all-to-all +>= 1\\.342 s ")

elseif(CASE STREQUAL "bad_topology")
  # Line 8 has a speed that is not a speed: every command must name the file and line and exit 1.
  set(bad "${WORK_DIR}/bad-speed.yaml")
  file(WRITE "${bad}" "switches:\n  - name: s0\nhosts:\n  - name: n0\n  - name: n1\nlinks:\n  - [n0, s0, 1Gbps]\n  - [n1, s0, fast]\n")
  foreach(cmd "topology;show;${bad}" "bound;--topology;${bad}" "schedule;--topology;${bad}")
    run_topotune(${cmd})
    expect_rc(1)
    expect_empty(stdout)
    expect_match(stderr "^topotune: [^\n]*bad-speed\\.yaml:8:[^\n]*links\\[1\\][^\n]*fast")
  endforeach()
  # A cycle is caught by the model and still points into the file.
  set(cyclic "${WORK_DIR}/cycle.yaml")
  file(WRITE "${cyclic}" "switches:\n  - name: s0\n  - name: s1\nhosts:\n  - name: n0\nlinks:\n  - [n0, s0, 1Gbps]\n  - [s0, s1, 1Gbps]\n  - [s1, s0, 1Gbps]\n")
  run_topotune(topology show "${cyclic}")
  expect_rc(1)
  expect_match(stderr "cycle\\.yaml:[0-9]+:")

elseif(CASE STREQUAL "missing_file")
  run_topotune(topology show "${WORK_DIR}/no-such-file.yaml")
  expect_rc(1)
  expect_match(stderr "no-such-file\\.yaml")

elseif(CASE STREQUAL "unknown_algorithm")
  run_topotune(schedule --topology "${fig1}" --collective alltoall --algorithm no_such_algorithm)
  expect_rc(2)
  expect_empty(stdout)
  expect_match(stderr "no_such_algorithm" "valid algorithms: [^\n]*tree_scheduled")

elseif(CASE STREQUAL "unknown_collective")
  run_topotune(schedule --topology "${fig1}" --collective reduce)
  expect_rc(2)
  expect_match(stderr "unknown collective 'reduce'; valid collectives: [^\n]*alltoall")

elseif(CASE STREQUAL "usage_errors")
  run_topotune()
  expect_rc(2)
  expect_match(stderr "A subcommand is required" "--help")
  run_topotune(frobnicate)
  expect_rc(2)
  run_topotune(topology)
  expect_rc(2)
  run_topotune(schedule --topology "${fig1}" --format yaml)
  expect_rc(2)
  expect_match(stderr "--format")
  run_topotune(schedule)
  expect_rc(2)
  expect_match(stderr "--topology is required")
  run_topotune(bound --topology "${two}" --msize lots)
  expect_rc(2)
  expect_match(stderr "--msize: 'lots'")
  run_topotune(bound --topology "${two}" --no-such-option)
  expect_rc(2)
  run_topotune(schedule --topology "${two}" --hosts h0,nowhere)
  expect_rc(2)
  expect_match(stderr "--hosts: unknown host 'nowhere'")
  run_topotune(schedule --topology "${two}" --hosts h0,s0)
  expect_rc(2)
  expect_match(stderr "'s0' is a switch")
  run_topotune(schedule --topology "${two}" --hosts h0 --rank-hosts h0,h1)
  expect_rc(2)

elseif(CASE STREQUAL "help")
  foreach(cmd "--help" "topology;--help" "topology;show;--help" "bound;--help" "schedule;--help" "discover;--help"
              "compare;--help")
    run_topotune(${cmd})
    expect_rc(0)
    expect_empty(stderr)
    expect_match(stdout "Usage: topotune" "EXAMPLES\n  topotune ")
  endforeach()
  run_topotune(schedule --help)
  # The algorithm list comes from the registry.
  expect_match(stdout "ALGORITHMS" "alltoall +tree_scheduled +contention-free" "--format" "--hosts")
  run_topotune(topology show --help)
  expect_match(stdout "<== bottleneck" "FILE")
  run_topotune(--version)
  expect_rc(0)
  expect_match(stdout "^topotune [0-9]+\\.[0-9]+")

elseif(CASE STREQUAL "discover_from_walks")
  # A recorded walk builds a tree with no socket: four LLDP neighbours of the
  # Arista recording are hosts on Ethernet1/3/5/47, and Ethernet48's bridge
  # neighbour, never walked, is a warning naming switch, port and reason.
  set(walk "${EXAMPLES}/../../../shared/fixtures/snmp/vendor/arista_eos.snmprec")
  run_topotune(discover --from-walks "${walk}" --out "${WORK_DIR}/tree.yaml")
  expect_rc(0)
  expect_empty(stdout)
  expect_match(stderr "discovered 1 switch\\(es\\), 4 host\\(s\\) \\(4 by LLDP, 0 by FDB\\), 4 link\\(s\\)"
    "port Ethernet48: LLDP neighbour 4900M-CORE.example.net \\(c4:7d:4f:c4:46:c0\\) is a bridge or router that was not walked"
    "wrote ")
  file(READ "${WORK_DIR}/tree.yaml" yaml)
  if(NOT yaml MATCHES "host-001b21bbe6f0.*3750E-Estudio1.example.net" OR NOT yaml MATCHES ":Ethernet47  10Gbps")
    fail("tree.yaml lacks the expected hosts and ports:\n${yaml}")
  endif()
  # The written file is a valid topology.
  run_topotune(topology show "${WORK_DIR}/tree.yaml" --ascii)
  expect_rc(0)
  # Excluded by address, the bridge on Ethernet48 is no longer a switch not
  # walked but a row counted in a note; an entry that matches nothing is a
  # warning.
  run_topotune(discover --from-walks "${walk}" --exclude-switch 84.232.18.1 --exclude-switch nosuch-switch)
  expect_rc(0)
  expect_match(stderr
    "note: exclude_switches: 1 LLDP row naming an excluded switch, not crawled and not in the tree\n"
    "warning: exclude_switches: 'nosuch-switch' matched no switch\n"
    "discovered 1 switch\\(es\\), 4 host\\(s\\)")
  if(err MATCHES "4900M-CORE")
    fail("the excluded switch is still reported as not walked")
  endif()
  expect_match(stdout "# note: exclude_switches: 1 LLDP row naming an excluded switch")

elseif(CASE STREQUAL "topology_diff")
  run_topotune(topology diff "${EXAMPLES}/two-switch-4x4.yaml" "${EXAMPLES}/two-switch-4x4.yaml")
  expect_rc(0)
  expect_match(stdout "same switches, hosts and links")
  file(READ "${EXAMPLES}/two-switch-4x4.yaml" yaml)
  string(REPLACE "[h7, s1, 100Mbps]" "[h7, s0, 1Gbps]" yaml "${yaml}")
  file(WRITE "${WORK_DIR}/moved.yaml" "${yaml}")
  run_topotune(topology diff "${EXAMPLES}/two-switch-4x4.yaml" "${WORK_DIR}/moved.yaml")
  expect_rc(1)
  expect_match(stdout "^\\+ link h7 -- s0 1Gbps\n- link h7 -- s1 100Mbps\n$")
  run_topotune(topology diff "${EXAMPLES}/two-switch-4x4.yaml" "${WORK_DIR}/none.yaml")
  expect_rc(2)
  expect_match(stderr "none\\.yaml")

elseif(CASE STREQUAL "discover_errors")
  run_topotune(discover)
  expect_rc(2)
  expect_match(stderr "give --seed ADDR")
  run_topotune(discover --seed 127.0.0.1 --v3-user u --v3-auth short --v3-priv alsoshort)
  expect_rc(2)
  expect_match(stderr "at least 8 characters")
  run_topotune(discover --seed 127.0.0.1 --port 70000)
  expect_rc(2)
  run_topotune(discover --from-walks "${WORK_DIR}/none.snmprec")
  expect_rc(2)
  # Nothing answers SNMP on the discard port: the seed times out, reported.
  run_topotune(discover --seed 127.0.0.1 --port 9 --timeout 0.2 --retries 0)
  expect_rc(1)
  expect_match(stderr "no switch could be walked from the seeds" "127.0.0.1: not walked: 127.0.0.1:9: no response \\(timeout\\)")
  # A file that is not a walk gives warnings, and no tree: nothing could be parsed from it.
  file(WRITE "${WORK_DIR}/garbage.snmprec" "not a walk\n1.3.6|4x|zz\n")
  run_topotune(discover --from-walks "${WORK_DIR}/garbage.snmprec")
  expect_rc(1)
  expect_match(stderr "warning: [^\n]*garbage\\.snmprec:2: malformed hex value"
    "warning: [^\n]*garbage\\.snmprec: none of its 2 line\\(s\\) is an SNMP record\n"
    "topotune discover: nothing could be parsed from [^\n]*garbage\\.snmprec: no system, IF-MIB, LLDP or BRIDGE-MIB rows\n$")

elseif(CASE STREQUAL "discover_no_host_diagnostics")
  # A switch whose LLDP neighbours are all bridges or routers, not walked, and
  # whose walk holds no FDB (as Dell OS10 in issue 18): no host. The run still
  # prints every warning and the neighbours not walked, each with its address
  # or why it has none, and does not offer --hosts, which would not help.
  # The walk: daemon/discovery/fuzz_corpus/os10-no-host.snmprec.
  run_topotune(discover --from-walks "${SOURCE_DIR}/daemon/discovery/fuzz_corpus/os10-no-host.snmprec")
  expect_rc(1)
  expect_empty(stdout)
  # The whole of stderr, in order (a '.' stands for each ';', which would split the regex).
  string(CONCAT want
    "^warning: os10 port mgmt1/1/1: LLDP neighbour 1007-mnt-1 \\(14:18:77:dd:6f:ca\\) is a bridge or router that was "
    "not walked \\(no SNMP access, or not reached\\). the subtree behind it is missing\n"
    "warning: os10 port ethernet1/1/1: LLDP neighbour spine1 \\(02:00:00:00:00:09\\) is a bridge or router that was "
    "not walked \\(no SNMP access, or not reached\\). the subtree behind it is missing\n"
    "2 switch neighbour\\(s\\) not walked \\(the subtrees behind them are missing\\):\n"
    "  1007-mnt-1 \\(14:18:77:dd:6f:ca\\) on os10 port mgmt1/1/1: no IPv4 management address in its LLDP rows\n"
    "  spine1 \\(02:00:00:00:00:09\\) on os10 port ethernet1/1/1: 10\\.0\\.0\\.9\n"
    "topotune discover: 1 switch\\(es\\) walked but no host found: no LLDP neighbour is a host, and no walk holds a "
    "forwarding database \\(dot1qTpFdbTable or dot1dTpFdbTable\\), so host MACs \\(--hosts\\) would not help: run "
    "lldpd on the hosts, so that the switches list them as LLDP neighbours. 2 switch neighbour\\(s\\) were not "
    "walked, and the hosts may be behind them\n$")
  expect_match(stderr "${want}")
  if(err MATCHES "pass them with --hosts")
    fail("--hosts is offered although no walk holds a forwarding database")
  endif()
  # An empty walk says that nothing could be parsed from it.
  file(WRITE "${WORK_DIR}/empty.snmprec" "")
  run_topotune(discover --from-walks "${WORK_DIR}/empty.snmprec")
  expect_rc(1)
  expect_match(stderr "^warning: [^\n]*empty\\.snmprec: the file is empty\ntopotune discover: nothing could be parsed from [^\n]*empty\\.snmprec: no system, IF-MIB, LLDP or BRIDGE-MIB rows\n$")

elseif(CASE STREQUAL "server_help")
  # Every command that talks to topotuned documents its connection options and exit codes.
  foreach(cmd "tune;--help" "tune;start;--help" "tune;status;--help" "decisions;--help" "decisions;show;--help"
              "plan;--help" "plan;show;--help" "export;--help")
    run_topotune(${cmd})
    expect_rc(0)
    expect_empty(stderr)
    expect_match(stdout "Usage: topotune" "EXAMPLES\n  topotune ")
  endforeach()
  foreach(cmd "tune;start;--help" "tune;status;--help" "decisions;show;--help" "plan;show;--help" "export;--help"
              "topology;show;--help" "discover;--help")
    run_topotune(${cmd})
    expect_rc(0)
    expect_match(stdout "--server" "TOPOTUNE_SERVER" "\n  69 ")
  endforeach()
  run_topotune(--help)
  expect_match(stdout "tune" "decisions" "plan" "export" "\n  69  topotuned cannot be reached")

elseif(CASE STREQUAL "doctor_db_help_and_usage")
  # doctor and db document themselves; bad flags exit 2, a missing database 1.
  foreach(cmd "doctor;--help" "db;--help" "db;backup;--help" "db;restore;--help" "db;info;--help")
    run_topotune(${cmd})
    expect_rc(0)
    expect_empty(stderr)
    expect_match(stdout "Usage: topotune" "EXAMPLES\n  topotune ")
  endforeach()
  run_topotune(doctor --help)
  expect_match(stdout "ok|warn|FAIL  CHECK: FINDING" "\n  69  topotuned cannot be reached at all")
  foreach(args "doctor;--timeout;0" "doctor;--plan-calls;0" "doctor;--server;nohost" "db;backup" "db;restore"
               "db")
    run_topotune(${args})
    expect_rc(2)
  endforeach()
  run_topotune(db info --database ${WORK_DIR}/missing.db)
  expect_rc(1)
  expect_match(stderr "topotune: ${WORK_DIR}/missing.db: no such database file")
  file(WRITE ${WORK_DIR}/garbage.db "this is not an SQLite database, but long enough to have a header of sorts....")
  run_topotune(db restore ${WORK_DIR}/garbage.db --database ${WORK_DIR}/target.db)
  expect_rc(1)
  expect_match(stderr "garbage.db")
  if(EXISTS ${WORK_DIR}/target.db)
    message(FATAL_ERROR "a refused restore created the database")
  endif()

elseif(CASE STREQUAL "server_usage_errors")
  # Usage errors exit 2 before any call: the address is one nobody listens on,
  # so a command that got as far as calling would exit 69 instead.
  set(nobody --server 127.0.0.1:1)
  # (foreach over quoted arguments: each keeps its ';'-separated words together.)
  foreach(cmd
      "tune;start;--collective;reduce;--nodes;2;--ranks-per-node;1"
      "tune;start;--collective;alltoall;--nodes;0;--ranks-per-node;1"
      "tune;start;--collective;alltoall;--nodes;2;--ranks-per-node;1;--sizes;1KiB,lots"
      "tune;start;--collective;alltoall;--nodes;2"
      "tune;status"
      "decisions;show;--collective;bcast"
      "plan;show;--collective;alltoall"
      "plan;show;--hosts;n0;--collective;allreduce"
      "export;--format;yaml"
      "export"
      "discover;--remote;--community;private"
      "discover;--remote;--exclude-switch;mgmt-sw1"
      "discover;--remote;--data-vlan;10")
    run_topotune(${cmd} ${nobody})
    expect_rc(2)
    expect_empty(stdout)
    if(err MATCHES "cannot reach")
      fail("a usage error must be reported before any call")
    endif()
  endforeach()
  run_topotune(tune start --collective reduce --nodes 2 --ranks-per-node 1 ${nobody})
  expect_match(stderr "unknown collective 'reduce'; valid collectives: alltoall, alltoallv, allgather")
  run_topotune(tune start --collective alltoall --nodes 2 --ranks-per-node 1 --sizes 1KiB,lots ${nobody})
  expect_match(stderr "--sizes: 'lots' is not a size")
  run_topotune(decisions show --server head01)
  expect_rc(2)
  expect_match(stderr "--server: 'head01' has no port")
  # The escape hatches of a local discovery: topotuned has its own keys for them.
  run_topotune(discover --remote --exclude-switch mgmt-sw1,10.0.0.250 ${nobody})
  expect_rc(2)
  expect_match(stderr "^topotune discover: --exclude-switch applies to a local discovery. with --remote \\(or "
                      "--server\\) topotuned uses its own settings \\(set discovery\\.exclude_switches in "
                      "topotuned\\.yaml\\)\n")
  run_topotune(discover --remote --data-vlan 10 ${nobody})
  expect_rc(2)
  expect_match(stderr "\\(set discovery\\.data_vlan in topotuned\\.yaml\\)\n")

elseif(CASE STREQUAL "server_unreachable")
  # Nothing listens on port 1: exit 69 at once (the connection is refused),
  # naming the address, with a hint. At once: the refusal is the reason, not
  # a wait for a connection ("no connection within") or for a deadline.
  foreach(cmd "topology;show" "discover;--remote" "tune;start;--collective;alltoall;--nodes;2;--ranks-per-node;1"
              "tune;status;t-1;--watch" "decisions;show" "plan;show;--hosts;n0:2;--collective;alltoall"
              "export;--format;classic")
    run_topotune(${cmd} --server 127.0.0.1:1)
    expect_rc(69)
    expect_empty(stdout)
    expect_match(stderr "^topotune: [A-Za-z]+: cannot reach topotuned at 127\\.0\\.0\\.1:1: "
                        "is topotuned running\\? see --server" "Connection refused")
    if(err MATCHES "no connection within|Deadline")
      fail("an unreachable server was reported after a wait, not at its refusal")
    endif()
  endforeach()
  # The address from the environment, and a short deadline for an address that may not answer.
  set(ENV{TOPOTUNE_SERVER} 127.0.0.1:1)
  run_topotune(decisions show --timeout 2)
  expect_rc(69)
  expect_match(stderr "at 127\\.0\\.0\\.1:1")
  unset(ENV{TOPOTUNE_SERVER})

else()
  message(FATAL_ERROR "cli_test.cmake: unknown CASE '${CASE}'")
endif()
