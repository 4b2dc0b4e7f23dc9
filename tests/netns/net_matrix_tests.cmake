# Issue 11 across namespace hosts (label netns, root only; exit 77 = skipped): net_matrix_rank run
# by net_matrix.sh under multihost.sh, every namespace a host (NCCL_HOSTID), so every connection
# between hosts is the net transport. Included from tests/netns/CMakeLists.txt.
#   NetMatrix.<net>.H<h>P<p>  the covering collective matrix over Socket and the emulated IB
#   NetMatrix.Plugin.H2P1     the matrix's all-reduce over the acclTest plugin (NCCL_NET_PLUGIN=path)
#   NetMatrix.StrictV6.H2P<p> the matrix over acclStrictV6, a v6 plugin that relies on NCCL's drive order
#   NetMatrix.StrictV6.<Old>  the same plugin driven in accl's order before issue 20 must fail
#   NetFault.<net>.<fault>    link down / QP error / SIGKILL during large all-reduces
#   NetWire.Socket.Attack     junk, wrong magic and silent connections to every listening port
#   NetZeroCopy.<net>.H<h>P<p>  large steps sent straight from the user's buffers (net_zero_copy_rank.cc);
#                               over IB and the v6 plugin only from ncclCommRegister'd ones
#   NetSteps.<net>.H<h>P<p>   the default FIFO across hosts: small, in-between and whole-slot steps
set(ACCL_COLL_DIR ${PROJECT_SOURCE_DIR}/tests/mp)
add_executable(net_matrix_rank net_matrix_rank.cc net_matrix_cases.cc net_fault_rank.cc net_wire_attacker.cc
                               net_zero_copy_rank.cc net_steps_rank.cc
                               net_crypt_rank.cc
                               ${ACCL_COLL_DIR}/collective_types.cc ${ACCL_COLL_DIR}/collective_expect.cc
                               ${ACCL_COLL_DIR}/collective_call.cc ${ACCL_COLL_DIR}/collective_runner.cc)
target_include_directories(net_matrix_rank PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(net_matrix_rank PRIVATE -Wall -Wextra)
target_link_libraries(net_matrix_rank PRIVATE nccl accl_test_support ${CMAKE_DL_LIBS})

set(ACCL_NM_RUN ${CMAKE_CURRENT_SOURCE_DIR}/net_matrix.sh)
# -N <net>: every connection between hosts must be the net transport, on network <net> (checked in
# the INIT log: no silent fallback to shm or to another network).
function(accl_net_matrix_test name net hosts per_host)
  add_test(NAME ${name} COMMAND ${ACCL_NM_RUN} -N ${net} -H ${hosts} -P ${per_host} -t 100 ${ARGN})
  # cpu_heavy: the fault tests' bounds and the virtual GPU's kernels do not share 2 cores well.
  set_tests_properties(${name} PROPERTIES LABELS netns TIMEOUT 150 SKIP_RETURN_CODE 77 RESOURCE_LOCK cpu_heavy)
endfunction()

set(ACCL_NM_NETS Socket)
set(ACCL_NM_ENV_Socket NCCL_NET=Socket)
if(TARGET accl-verbs-emu)
  list(APPEND ACCL_NM_NETS IB)
  set(ACCL_NM_ENV_IB NCCL_NET=IB ACCL_IBVERBS_LIB=$<TARGET_FILE:accl-verbs-emu>)
  add_dependencies(net_matrix_rank accl-verbs-emu)
endif()
foreach(net ${ACCL_NM_NETS})
  foreach(shape 2x1 2x2 4x1 4x2)
    string(REPLACE "x" ";" hp ${shape})
    list(GET hp 0 h)
    list(GET hp 1 p)
    accl_net_matrix_test(NetMatrix.${net}.H${h}P${p} ${net} ${h} ${p} -- env ${ACCL_NM_ENV_${net}}
                         $<TARGET_FILE:net_matrix_rank> matrix)
  endforeach()
endforeach()
if(TARGET accl_test_net_v8)
  accl_net_matrix_test(NetMatrix.Plugin.H2P1 acclTest 2 1 -- env NCCL_NET_PLUGIN=$<TARGET_FILE:accl_test_net_v8>
                       NCCL_NET=acclTest $<TARGET_FILE:net_matrix_rank> matrix allreduce)
  add_dependencies(net_matrix_rank accl_test_net_v8)
endif()

# acclStrictV6 (tests/net_plugin/accl_strict_v6_net.cc): blocking accept, in-order completion, no
# sizes from test, one buffer per receive, host memory only. It carries the whole matrix; driven
# the old way (ACCL_CONNECT_ORDER=recv-first: both ranks wait in accept; ACCL_NET_TEST_ORDER=any:
# a header tested before the payload posted ahead of it) the same run must fail with the plugin's
# error, by itself and well before the deadline (net_matrix.sh -F).
if(TARGET accl_strict_v6_net)
  set(_strict env NCCL_NET_PLUGIN=$<TARGET_FILE:accl_strict_v6_net> NCCL_NET=acclStrictV6)
  foreach(p 1 2)
    accl_net_matrix_test(NetMatrix.StrictV6.H2P${p} acclStrictV6 2 ${p} -- ${_strict} $<TARGET_FILE:net_matrix_rank>
                         matrix)
  endforeach()
  accl_net_matrix_test(NetMatrix.StrictV6.RecvFirst acclStrictV6 2 1 -t 60 -F -g "acclStrictV6: accept: no peer" --
                       ${_strict} ACCL_CONNECT_ORDER=recv-first ACCL_STRICT_NET_ACCEPT_MS=3000
                       $<TARGET_FILE:net_matrix_rank> matrix allreduce)
  accl_net_matrix_test(NetMatrix.StrictV6.AnyTestOrder acclStrictV6 2 1 -t 60 -F -g "acclStrictV6: test on .* request"
                       -- ${_strict} ACCL_NET_TEST_ORDER=any $<TARGET_FILE:net_matrix_rank> matrix allreduce)
  # Zero copy through the v6 plugin: regMr of the user's registered buffers (host memory) while
  # the comm's other requests are in flight, and its in-order completion, hold; receives land in
  # registered buffers too.
  accl_net_matrix_test(NetZeroCopy.StrictV6.H2P1 acclStrictV6 2 1 -g "straight from the user's buffer" -m 2
                       -g "landed straight in the user's buffer"
                       -g "released the registration of user buffer .* at ncclCommDeregister" -m 12
                       -- ${_strict} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_BUFFSIZE=65536
                       ACCL_NET_ZERO_COPY_MIN=4096 $<TARGET_FILE:net_matrix_rank> zerocopy)
  add_dependencies(net_matrix_rank accl_strict_v6_net)
endif()

# Faults: liveness lowered so a dead link is declared within seconds (the defaults give 20 s of
# heartbeat silence, under the 30 s the issue allows); the rank checks error <= 15 s after the fault.
set(ACCL_NM_FAULT_ENV ACCL_HEARTBEAT_INTERVAL_MS=250 ACCL_HEARTBEAT_TIMEOUT_MS=3000 ACCL_NM_FAULT_BOUND_S=15
                      ACCL_VERBS_EMU_RETRY_MS=2000)
accl_net_matrix_test(NetFault.Socket.LinkDown Socket 2 1 -- env NCCL_NET=Socket ${ACCL_NM_FAULT_ENV}
                     $<TARGET_FILE:net_matrix_rank> fault linkdown)
accl_net_matrix_test(NetFault.Socket.Kill Socket 2 1 -- env NCCL_NET=Socket ${ACCL_NM_FAULT_ENV}
                     $<TARGET_FILE:net_matrix_rank> fault kill)
if(TARGET accl-verbs-emu)
  accl_net_matrix_test(NetFault.IB.QpError IB 2 1 -- env ${ACCL_NM_ENV_IB} ${ACCL_NM_FAULT_ENV}
                       $<TARGET_FILE:net_matrix_rank> fault qperror)
endif()

# Bad input: the listeners reject the attacker's connections (a WARN line, shown since -n sets
# NCCL_DEBUG=INFO) and the job runs.
# Each net listener of host 0 gets the attacker's three connections: junk and wrong magic are
# rejected at once ("wrong magic", at least 3 lines wanted); a silent one would be rejected after
# ACCL_SOCKET_HANDSHAKE_MS (1 s here), but the listener usually closes sooner, once its real
# connection is accepted.
accl_net_matrix_test(NetWire.Socket.Attack Socket 2 2 -g "NET/Socket.*rejected" -m 3 -- env NCCL_NET=Socket
                     ACCL_SOCKET_HANDSHAKE_MS=1000 $<TARGET_FILE:net_matrix_rank> attack)

# Zero copy: 8 KiB slots and a 4 KiB threshold, so steps fall on both sides of it; every rank's
# proxy must log that a step went straight from the user's buffer (NCCL_DEBUG_SUBSYS NET), at
# least once per sending connection between hosts (2 channels; 2x1: 2 ranks, 2x2: the 2 ranks
# whose ring neighbour is on the other host), and every element is checked. Over Socket a step
# also lands straight in the receiver's buffer whenever the receiver waits before the proxy posts
# it (hundreds per run; the test wants one).
foreach(shape 2x1 2x2)
  string(REPLACE "x" ";" hp ${shape})
  list(GET hp 0 h)
  list(GET hp 1 p)
  accl_net_matrix_test(NetZeroCopy.Socket.H${h}P${p} Socket ${h} ${p} -g "straight from the user's buffer" -m 4
                       -g "landed straight in the user's buffer"
                       -- env NCCL_NET=Socket NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_BUFFSIZE=65536
                       ACCL_NET_ZERO_COPY_MIN=4096 $<TARGET_FILE:net_matrix_rank> zerocopy)
  # IB verbs sends only from registered memory: the steps inside ncclCommRegister'd buffers go
  # straight from them (the proxy registers each buffer with the device once), and every one of
  # those registrations is released at ncclCommDeregister (3 rounds x 2 buffers, per sending end).
  if(TARGET accl-verbs-emu)
    accl_net_matrix_test(NetZeroCopy.IB.H${h}P${p} IB ${h} ${p} -g "straight from the user's buffer" -m 4
                         -g "landed straight in the user's buffer"
                         -g "released the registration of user buffer .* at ncclCommDeregister" -m 24
                         -- env ${ACCL_NM_ENV_IB} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_BUFFSIZE=65536
                         ACCL_NET_ZERO_COPY_MIN=4096 $<TARGET_FILE:net_matrix_rank> zerocopy)
  endif()
endforeach()

# Steps: at the defaults a communicator across hosts gets 4 MiB FIFOs (the INIT line says so) and
# cuts each item into steps by its share per rank; every element of every case is checked. The
# engine's cut is the same over every network: IB runs the 2x1 shape only (2x2 takes 25 s).
foreach(net ${ACCL_NM_NETS})
  foreach(p 1 2)
    if(NOT net STREQUAL "Socket" AND p EQUAL 2)
      continue()
    endif()
    set(h 2)
    accl_net_matrix_test(NetSteps.${net}.H${h}P${p} ${net} ${h} ${p}
                         -g "Simple FIFO of 4096 KiB per connection .8 steps of 512 KiB, the communicator spans hosts"
                         -- env ${ACCL_NM_ENV_${net}} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
                         $<TARGET_FILE:net_matrix_rank> steps)
  endforeach()
endforeach()

# tests/netns/bench_net.sh's raw TCP measurement (a tool, not a test).
add_executable(tcp_bidir tcp_bidir.cc)
target_link_libraries(tcp_bidir PRIVATE Threads::Threads)

# CUDA ranks across namespace hosts (issue 17): accl-perf with device buffers and its data check
# (-c 1, exit 7 on a wrong element), accl's CUDA backend on the virtual GPU (build/vgpu first on
# the library path), every connection between hosts through the net transport.
#   NetMatrix.Vgpu.<net>.<collective>[.<algo>].H<h>P<p>
if(ACCL_CUDA_RUNTIME STREQUAL "shared" AND TARGET accl-vgpu AND ACCL_BUILD_BENCH)  # accl-perf: bench/
  set(_vgpu_perf env LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/vgpu ACCL_BACKEND=cuda)
  function(accl_vgpu_net_test net coll algo hosts per_host)
    set(name NetMatrix.Vgpu.${net}.${coll})
    set(algo_env "")
    if(algo)
      set(name ${name}.${algo})
      set(algo_env NCCL_ALGO=${algo})
    endif()
    accl_net_matrix_test(${name}.H${hosts}P${per_host} ${net} ${hosts} ${per_host} -- ${_vgpu_perf}
                         ${ACCL_NM_ENV_${net}} ${algo_env} $<TARGET_FILE:accl-perf> -C ${coll} -b 8 -e 1M -f 32
                         -c 1 -n 2 -w 1)
  endfunction()
  accl_vgpu_net_test(Socket all_reduce "" 2 2)
  accl_vgpu_net_test(Socket all_reduce Tree 2 2)
  accl_vgpu_net_test(Socket reduce_scatter "" 2 1)
  accl_vgpu_net_test(Socket sendrecv "" 2 2)
  if(TARGET accl-verbs-emu)
    accl_vgpu_net_test(IB all_gather "" 2 2)
    accl_vgpu_net_test(IB broadcast "" 2 1)
  endif()
  add_dependencies(net_matrix_rank accl-vgpu accl-perf)
endif()

# Issue 21, encryption (ACCL_ENCRYPTION_PSK_FILE from -K: TLS 1.3 on every TCP connection):
#   NetCrypt.Socket.Matrix.H2P2  the covering matrix, encrypted
#   NetCrypt.Socket.Wire.Psk     the marker all-gathers, correct, and never in clear on the wire; nor
#                                are the liveness heartbeats (a BEAT frame's head) or accl-ras's
#                                answers across the hosts (RAS on 0.0.0.0); accl-ras without a key or
#                                with another key is refused, and so is a client with another key at
#                                every listening port of host 1 (liveness included), saying so
#   NetCrypt.Socket.Wire.Clear   the same without a key: the capture finds all three (it can fail)
#   NetCrypt.Socket.<fault>      another key / no key file / a plaintext rank: every rank fails init
#                                with a message (the faulty one's is grepped), within the bound
add_executable(wire_capture wire_capture.cc)
add_dependencies(net_matrix_rank wire_capture)
# Data sockets forced on (2 threads x 2 sockets): the wire test covers them, not only the control socket.
set(ACCL_NM_CRYPT_ENV NCCL_NET=Socket ACCL_BOOTSTRAP_TIMEOUT_MS=5000 NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2)
accl_net_matrix_test(NetCrypt.Socket.Matrix.H2P2 Socket 2 2 -K -- env ${ACCL_NM_ENV_Socket}
                     $<TARGET_FILE:net_matrix_rank> matrix)
# Wire markers: the payload, a liveness BEAT frame's head (magic "vlca", kind 2; beats every 100 ms)
# and accl-ras's version answer.
set(ACCL_NM_WIRE_MARKERS -M payload=ACCL-WIRE-MARK: -M heartbeat=hex:766c636102000000
                         -M ras=accl-ras\ protocol\ 1\ library)
set(ACCL_NM_WIRE_ENV ${ACCL_NM_CRYPT_ENV} ACCL_HEARTBEAT_INTERVAL_MS=100 NCCL_RAS_ADDR=0.0.0.0:28028
                     ACCL_NM_RAS_BIN=$<TARGET_FILE:accl-ras>)
add_dependencies(net_matrix_rank accl-ras)
accl_net_matrix_test(NetCrypt.Socket.Wire.Psk Socket 2 2 -K -C absent -c $<TARGET_FILE:wire_capture>
                     ${ACCL_NM_WIRE_MARKERS} -g "allgather of .* correct" -m 8
                     -g "liveness: dropped a connection before its HELLO: .*pre-shared key differs" -m 2
                     -- env ${ACCL_NM_WIRE_ENV} $<TARGET_FILE:net_matrix_rank> crypt wire)
accl_net_matrix_test(NetCrypt.Socket.Wire.Clear Socket 2 2 -C present -c $<TARGET_FILE:wire_capture>
                     ${ACCL_NM_WIRE_MARKERS} -g "allgather of .* correct" -m 8 -- env ${ACCL_NM_WIRE_ENV}
                     $<TARGET_FILE:net_matrix_rank> crypt wire)
# The faulty rank names its problem; with another key or a plaintext rank, the healthy rank's
# timeout also says why the rank never arrived (-m 2: both lines).
set(re_key "init failed .*key differs")
set(m_key 2)
set(re_missing "faulty init failed .*ACCL_ENCRYPTION_PSK_FILE=/nonexistent")
set(m_missing 1)
set(re_plaintext "init failed .*(requires encryption|without encryption)")
set(m_plaintext 2)
foreach(fault key missing plaintext)
  # No -N: init fails, so no connection is ever logged.
  add_test(NAME NetCrypt.Socket.Fault.${fault} COMMAND ${ACCL_NM_RUN} -H 2 -P 1 -t 100 -K -g "${re_${fault}}"
           -m ${m_${fault}} -- env
           ${ACCL_NM_CRYPT_ENV} $<TARGET_FILE:net_matrix_rank> crypt ${fault})
  set_tests_properties(NetCrypt.Socket.Fault.${fault} PROPERTIES LABELS netns TIMEOUT 150 SKIP_RETURN_CODE 77
                       RESOURCE_LOCK cpu_heavy)
endforeach()
