// The one registry of every environment variable accl reads: NCCL_* names keep NCCL's meaning,
// ACCL_* names are accl's own. Each line: ACCL_PARAM(NAME, Kind, "default", "help").
// Kind is Int (parsed with strtoll base 0, so hex works) or Str. tools/accl-info --env prints it.
// Add a line here before reading a new variable; reading an undeclared name is a bug.
// (No include guard: this file is expanded several times with different ACCL_PARAM definitions.)

// --- Logging ---
ACCL_PARAM(NCCL_DEBUG, Str, "", "Log level: VERSION, WARN, INFO, ABORT or TRACE (unset: silent).")
ACCL_PARAM(NCCL_DEBUG_SUBSYS, Str, "INIT,BOOTSTRAP,ENV",
           "Comma list of subsystems logged at INFO (INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,ALLOC,CALL,PROXY,"
           "NVLS,BOOTSTRAP,REG,PROFILE,RAS,ALL); a leading ^ excludes the listed ones.")
ACCL_PARAM(NCCL_DEBUG_FILE, Str, "", "Write logs to this file instead of stdout; %h = hostname, %p = pid.")
ACCL_PARAM(NCCL_CONF_FILE, Str, "",
           "File of KEY=VALUE defaults (else ~/.nccl.conf, then /etc/nccl.conf); the environment wins.")
ACCL_PARAM(NCCL_ENV_PLUGIN, Str, "",
           "Env plugin that supplies setting values instead of the environment and config files: a name "
           "(libnccl-env-<name>.so), a path, or \"none\" (unset: libnccl-env.so when it can be loaded).")
ACCL_PARAM(NCCL_PARAM_DUMP_ALL, Str, "",
           "Accepted for NCCL compatibility: NCCL lists only documented settings in ncclParamDumpAll / "
           "ncclParamGetAllParameterKeys unless this is true; accl always lists every setting.")

// --- Backend and communicators ---
ACCL_PARAM(ACCL_BACKEND, Str, "", "Execution backend: 'auto', 'cuda' or 'host' (default auto: cuda when built "
                                  "with CUDA and a GPU is visible, else host).")
ACCL_PARAM(NCCL_COMM_BLOCKING, Int, "-2147483648",
           "Overrides ncclConfig_t.blocking for every communicator (0 = nonblocking, 1 = blocking).")
ACCL_PARAM(NCCL_COMM_SPLIT_SHARE_RESOURCES, Int, "-2147483648", "Overrides ncclConfig_t.splitShare.")
ACCL_PARAM(NCCL_COMM_SHRINK_SHARE_RESOURCES, Int, "-2147483648", "Overrides ncclConfig_t.shrinkShare.")
ACCL_PARAM(NCCL_CGA_CLUSTER_SIZE, Int, "-2147483648", "Overrides ncclConfig_t.cgaClusterSize (max 8).")
ACCL_PARAM(NCCL_MIN_CTAS, Int, "-2147483648", "Overrides ncclConfig_t.minCTAs.")
ACCL_PARAM(NCCL_MAX_CTAS, Int, "-2147483648", "Overrides ncclConfig_t.maxCTAs.")
ACCL_PARAM(NCCL_NET, Str, "", "Overrides ncclConfig_t.netName: the network to use (IB, Socket, or a plugin's).")
ACCL_PARAM(NCCL_NET_PLUGIN, Str, "",
           "External net plugins to try before IB and Socket: a comma list of names (libnccl-net-<name>.so) or "
           "paths, each also tried as given; \"none\" = no plugin (unset: libnccl-net.so when it can be loaded).")
ACCL_PARAM(NCCL_COLLNET_ENABLE, Int, "-2147483648", "Overrides ncclConfig_t.collnetEnable.")
ACCL_PARAM(NCCL_CTA_POLICY, Int, "-2147483648", "Overrides ncclConfig_t.CTAPolicy.")
ACCL_PARAM(NCCL_NVLS_NCHANNELS, Int, "-2147483648", "Overrides ncclConfig_t.nvlsCTAs.")
ACCL_PARAM(NCCL_NCHANNELS_PER_NET_PEER, Int, "-2147483648", "Overrides ncclConfig_t.nChannelsPerNetPeer.")
ACCL_PARAM(NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE, Int, "-2147483648",
           "Overrides ncclConfig_t.nvlinkCentricSched.")
ACCL_PARAM(NCCL_P2P_MAX_PEERS, Int, "-2147483648",
           "Overrides ncclConfig_t.maxP2pPeers (accepted; the host backend connects peers on first use).")
ACCL_PARAM(NCCL_GRAPH_STREAM_ORDERING, Int, "-2147483648",
           "Overrides ncclConfig_t.graphStreamOrdering (accepted; no CUDA graphs on the host backend).")
ACCL_PARAM(NCCL_LAUNCH_ORDER_IMPLICIT, Int, "-2147483648",
           "Overrides ncclConfig_t.launchOrderImplicit (accepted; host calls run in call order).")
ACCL_PARAM(NCCL_NUM_RMA_CTX, Int, "-2147483648",
           "Overrides ncclConfig_t.numRmaCtx (accepted; one-sided RMA needs the CUDA backend).")
ACCL_PARAM(NCCL_RMA_EAGER_INIT, Int, "-2147483648",
           "Overrides ncclConfig_t.rmaEagerInit (accepted; one-sided RMA needs the CUDA backend).")
ACCL_PARAM(NCCL_HOSTID, Str, "", "Overrides the host identity string: ranks with different ids are treated as "
                                 "different nodes (used by tests to build virtual nodes).")

// --- Topology and tuning ---
ACCL_PARAM(NCCL_TOPO_FILE, Str, "",
           "Topology XML to start from (NCCL format); unset: /var/run/nvidia-topologyd/virtualTopology.xml "
           "when present, else discovery only.")
ACCL_PARAM(NCCL_TOPO_DUMP_FILE, Str, "", "Write the detected topology as XML (NCCL format) to this file.")
ACCL_PARAM(NCCL_TOPO_DUMP_FILE_RANK, Int, "0", "The rank that writes NCCL_TOPO_DUMP_FILE.")
ACCL_PARAM(NCCL_CROSS_NIC, Int, "2",
           "Channels across nodes may enter and leave a node by different NICs: 0 never, 1 always allowed, 2 try "
           "without first.")
ACCL_PARAM(NCCL_P2P_LEVEL, Str, "",
           "Max GPU-GPU path type for direct P2P: LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS, or legacy 0-5 "
           "(unset: PXB; SYS on AMD x86 with <= 2 GPUs).")
ACCL_PARAM(NCCL_P2P_DISABLE, Int, "0", "1: no direct GPU-GPU P2P (pairs go through the CPU); wins over NCCL_P2P_LEVEL.")
ACCL_PARAM(NCCL_SHM_DISABLE, Int, "0", "1: disable the shared-memory transport between local ranks.")
ACCL_PARAM(NCCL_CUMEM_ENABLE, Int, "-2",
           "cuMem (CUDA VMM) for ncclMemAlloc and GPU P2P buffers shared as POSIX fds: 0 off (cudaMalloc, cudaIpc "
           "handles), 1 on, -2 auto (on when the driver and device support it).")
ACCL_PARAM(NCCL_NET_GDR_LEVEL, Str, "",
           "Max GPU-NIC path type for GPUDirect RDMA (same names / numbers as NCCL_P2P_LEVEL; unset: PXB).")
ACCL_PARAM(NCCL_NET_GDR_C2C, Int, "1", "1: a GPU reaching its NIC over C2C then PCIe (P2C) counts as C2C for GDR.")
ACCL_PARAM(NCCL_NVB_DISABLE, Int, "0", "1: no NVLink paths relayed through a third GPU (NVB).")
ACCL_PARAM(NCCL_PXN_DISABLE, Int, "0", "1: no PXN (reaching a NIC through an NVLink peer GPU).")
ACCL_PARAM(NCCL_PXN_C2C, Int, "1", "1: a PXN relay GPU may reach its NIC over C2C (P2C), not only PCIe (<= PXB).")
ACCL_PARAM(NCCL_ALGO, Str, "",
           "Allowed algorithms, [func:]list[;func:list]... e.g. \"ring;allreduce:tree,ring\"; ^ excludes; names "
           "Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT, and OneShot (accl: the host backend's "
           "one-round all-reduce) (unset: all).")
ACCL_PARAM(NCCL_PROTO, Str, "",
           "Allowed protocols, [func:]list[;func:list]... e.g. \"^LL128;allreduce:LL128\"; ^ excludes; names "
           "LL LL128 Simple (unset: all, LL128 where the topology supports it).")
ACCL_PARAM(NCCL_TUNER_PLUGIN, Str, "",
           "Tuner plugin: a name (loads libnccl-tuner-<name>.so), a path to a .so, or \"none\" (unset: "
           "libnccl-tuner.so when it can be loaded, else no plugin).")
ACCL_PARAM(NCCL_PROFILER_PLUGIN, Str, "",
           "Profiler plugin: a name (loads libnccl-profiler-<name>.so), a path to a .so, or \"none\" (unset: "
           "libnccl-profiler.so when it can be loaded, else no plugin). accl ships accl-trace "
           "(libnccl-profiler-accl-trace.so), which writes a Chrome/Perfetto trace.")
ACCL_PARAM(NCCL_PROFILE_EVENT_MASK, Str, "",
           "Profiler events to ask for: the activation mask (NCCL's event bits, e.g. 4095 = every v5 event) a "
           "profiler plugin's init starts from; the plugin may change it (unset: 0, the plugin decides).")
ACCL_PARAM(NCCL_NET_OVERHEAD, Int, "-2",
           "GPU cost model: per-step network overhead in nanoseconds (-2: 1000 on Intel CPUs, 2000 on AMD).")
ACCL_PARAM(NCCL_NTHREADS, Int, "-2", "GPU threads per channel for LL and Simple (multiple of 32; -2: 512).")
ACCL_PARAM(NCCL_LL128_NTHREADS, Int, "-2", "GPU threads per channel for LL128 (multiple of 32; -2: 640).")

// --- Bootstrap and sockets ---
ACCL_PARAM(NCCL_COMM_ID, Str, "", "Fixed bootstrap root address host:port; rank 0 then hosts the root.")
ACCL_PARAM(NCCL_SOCKET_IFNAME, Str, "",
           "The only interfaces accl may use for TCP (bootstrap, Socket net, IB side channel) and the Ethernet "
           "NICs topology shows: prefix list, ^ excludes, = exact names (e.g. =eth0,lo). Unset: ib*, then the "
           "NCCL_COMM_ID subnet (not for IB), then all but docker/lo/virbr, then those; topology shows all.")
ACCL_PARAM(NCCL_SOCKET_FAMILY, Str, "",
           "Address family for the same TCP traffic: AF_INET or AF_INET6 (unset or anything else: either).")
ACCL_PARAM(NCCL_SOCKET_RETRY_CNT, Int, "34",
           "Connect attempts retried on refused/unreachable/timed-out errors before giving up.")
ACCL_PARAM(NCCL_SOCKET_RETRY_SLEEP_MSEC, Int, "100",
           "Sleep before connect retry number N is N times this many milliseconds.")
ACCL_PARAM(NCCL_SOCKET_NTHREADS, Int, "-2",
           "Socket network: helper threads per connection, max 16 (-2: auto, 0 = the proxy thread moves the "
           "data on the control socket; 2 on AWS, 4 on GCP NICs).")
ACCL_PARAM(NCCL_NSOCKS_PERTHREAD, Int, "-2",
           "Socket network: data sockets per helper thread; threads x sockets max 64 (-2: auto, 1; 8 on AWS).")
ACCL_PARAM(NCCL_SOCKET_MIN_TASKSIZE, Int, "65536",
           "Socket network: smallest piece a large message is split into across the data sockets.")
ACCL_PARAM(NCCL_SOCKET_INLINE, Int, "128",
           "Socket network: messages up to this many bytes travel on the control socket, not the data sockets.")
ACCL_PARAM(ACCL_NET_TEST_ORDER, Str, "auto",
           "How the network proxy tests a connection's requests: auto = oldest first on external net plugins (NCCL's "
           "order, which older plugins rely on), in any order on the built-in Socket and IB; oldest = oldest first "
           "everywhere; any = any order everywhere (for tests: an order-reliant plugin then fails).")
ACCL_PARAM(ACCL_NET_ZERO_COPY_MIN, Int, "65536",
           "Host backend over the network: Simple steps of at least this many bytes go from the user's buffer "
           "straight to the network, not through a staging copy (IB verbs and plugins: only from buffers "
           "registered with ncclCommRegister); receives of such steps land straight in the user's buffer when the "
           "schedule only stores them (ACCL_NET_ZERO_COPY_RECV; IB and plugins: registered buffers); 0: never.")
ACCL_PARAM(ACCL_NET_ZERO_COPY_RECV, Int, "1",
           "Host backend over the network: 1 lets a Simple step of at least ACCL_NET_ZERO_COPY_MIN bytes that the "
           "receiver only stores (no reduction) be received straight into the user's buffer when the receiver is "
           "already waiting for it (IB verbs and plugins: only inside ncclCommRegister'd buffers); 0: every receive "
           "goes through the FIFO.")
ACCL_PARAM(ACCL_SOCKET_HANDSHAKE_MS, Int, "5000",
           "Socket network: a connection to a listening port that has not sent its hello (magic, connection id) "
           "within this many milliseconds is rejected with a WARN naming its address.")
ACCL_PARAM(ACCL_BOOTSTRAP_TIMEOUT_MS, Int, "120000",
           "Bound on every bootstrap wait (root waiting for ranks, ranks waiting for the root or a peer); "
           "on expiry init fails naming the ranks that never arrived.")
ACCL_PARAM(ACCL_CONNECT_ORDER, Str, "send-first",
           "Connection setup calls every sending end's connect before any receiving end's accept in each pass, "
           "as NCCL does (net plugins whose accept blocks rely on it); recv-first reverses it (for tests only).")
ACCL_PARAM(ACCL_BOOTSTRAP_SECRET, Str, "",
           "With NCCL_COMM_ID: a passphrase every rank must share; its SHA-256 becomes the job's bootstrap "
           "secret, which every connection must prove. Unset: NCCL_COMM_ID jobs accept anyone who can reach "
           "the port, as NCCL does (ids from ncclGetUniqueId always carry a random secret).")

ACCL_PARAM(ACCL_ENCRYPTION_PSK_FILE, Str, "",
           "A file holding a pre-shared key (its first line, at least 32 bytes): every TCP connection accl "
           "makes between processes then runs TLS 1.3 with that key, as if the program had called "
           "ncclSetEncryption(NCCL_ENCRYPTION_MODE_PSK) before its first communicator (a call wins over "
           "the file). For programs that cannot be changed (accl-perf, tests). The key itself is never logged.")

// --- InfiniBand / RoCE network (transports/net/ib) ---
ACCL_PARAM(ACCL_IBVERBS_LIB, Str, "libibverbs.so.1",
           "Verbs library the IB network loads with dlopen (e.g. the test emulator libaccl-verbs-emu.so); when it "
           "cannot be loaded or reports no active port the IB network has zero devices.")
ACCL_PARAM(NCCL_IB_DISABLE, Int, "0", "1: do not use the IB network (no verbs library is loaded).")
ACCL_PARAM(NCCL_IB_HCA, Str, "",
           "HCAs (ports) the IB network uses: prefix list, ^ excludes, = exact names, name:port (e.g. =mlx5_0:1).")
ACCL_PARAM(NCCL_IB_GID_INDEX, Int, "-1",
           "RoCE GID index (-1: the first GID of NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM).")
ACCL_PARAM(NCCL_IB_ROCE_VERSION_NUM, Int, "2", "RoCE version of the GID chosen when NCCL_IB_GID_INDEX is -1.")
ACCL_PARAM(NCCL_IB_ADDR_FAMILY, Str, "AF_INET",
           "Address family (AF_INET or AF_INET6) of the GID chosen when NCCL_IB_GID_INDEX is -1.")
ACCL_PARAM(NCCL_IB_TIMEOUT, Int, "20", "IB ack timeout exponent: 4.096 us x 2^value per retry (QP attribute).")
ACCL_PARAM(NCCL_IB_RETRY_CNT, Int, "7", "IB transport retries before a work request fails (QP attribute).")
ACCL_PARAM(NCCL_IB_SL, Int, "-1", "IB service level (-1: the connection's traffic class, else 0).")
ACCL_PARAM(NCCL_IB_TC, Int, "-1", "IB / RoCE traffic class (-1: the connection's traffic class, else 0).")
ACCL_PARAM(NCCL_IB_QPS_PER_CONNECTION, Int, "1",
           "Queue pairs per IB connection (1..16); each message is split across them in 128-byte aligned parts.")
ACCL_PARAM(NCCL_IB_PCI_RELAXED_ORDERING, Int, "2",
           "Register memory with PCIe relaxed ordering: 0 off, 1 on, 2 when the verbs library offers it.")

// --- Collective engine ---
ACCL_PARAM(NCCL_MIN_NCHANNELS, Int, "0", "Minimum number of channels (host backend: worker threads per rank).")
ACCL_PARAM(NCCL_MAX_NCHANNELS, Int, "0", "Maximum number of channels (0: no limit beyond the backend's own).")
ACCL_PARAM(NCCL_BUFFSIZE, Int, "-2",
           "Bytes of Simple-protocol FIFO per connection (default: 4 MiB on GPUs; host backend: 1 MiB, 4 MiB in a "
           "communicator that spans hosts).")
ACCL_PARAM(NCCL_LL_BUFFSIZE, Int, "-2",
           "Bytes of LL-protocol FIFO per connection (half is payload; default 256 KiB on the host backend).")
ACCL_PARAM(NCCL_LL128_BUFFSIZE, Int, "-2",
           "Bytes of LL128-protocol FIFO per connection (GPU backend only; default 4800 KiB, NCCL's).")
ACCL_PARAM(ACCL_TIMEOUT_MS, Int, "1800000",
           "A collective or send/recv that sees no progress from a peer for this long fails with ncclRemoteError "
           "naming the peer (0: wait forever). A peer process that exits, freezes or becomes unreachable is detected "
           "by liveness regardless (ACCL_HEARTBEAT_TIMEOUT_MS).")
ACCL_PARAM(ACCL_HEARTBEAT_INTERVAL_MS, Int, "1000",
           "Liveness: each process sends a heartbeat to every process it shares a communicator with this often "
           "(a background thread, so a rank busy in a long collective is still alive); <= 0 turns liveness off.")
ACCL_PARAM(ACCL_HEARTBEAT_TIMEOUT_MS, Int, "20000",
           "Liveness: a process from which nothing arrived for this long is declared failed (frozen, e.g. SIGSTOP, "
           "or unreachable); every rank's operations then fail with ncclRemoteError naming it. 0: only exits and "
           "broken connections are detected.")
ACCL_PARAM(ACCL_WAIT_LOG_INTERVAL_MS, Int, "60000",
           "A collective or send/recv that has waited this long for a peer logs a WARN line (operation, opCount, "
           "the peer, its pid, host and last heartbeat), and again at every interval; 0: never.")
ACCL_PARAM(ACCL_TUNER_FILE, Str, "",
           "Host-backend tuner calibration written by `accl-tune calibrate` (default: $XDG_CACHE_HOME or ~/.cache, "
           "then accl/tuner-host.conf, used when it exists; \"none\" disables calibration).")
ACCL_PARAM(ACCL_HOST_SPIN, Int, "-1",
           "Host backend: polls of a FIFO before a waiting thread yields its core (-1: 50; 10 when the node's "
           "ranks x channels outnumber the CPUs; 50 when the network's helper threads make them outnumber them).")
ACCL_PARAM(ACCL_HOST_YIELD_US, Int, "-1",
           "Host backend: microseconds a waiting thread polls with sched_yield() before it sleeps on a futex (-1: 200, "
           "or 5000 when oversubscribed).")

// --- Status queries and debug checks (RAS) ---
ACCL_PARAM(NCCL_RAS_ENABLE, Int, "1",
           "Run the RAS status server that accl-ras queries (one thread per process, started with the first "
           "communicator); 0 turns it off.")
ACCL_PARAM(NCCL_RAS_ADDR, Str, "localhost:28028",
           "host:port the RAS status server listens on; when the port is taken (another process of the job on this "
           "host) the next ports are tried, up to ACCL_RAS_PORT_RANGE of them.")
ACCL_PARAM(ACCL_RAS_PORT_RANGE, Int, "64",
           "How many consecutive ports from NCCL_RAS_ADDR's the RAS status server tries (accl-ras --scan N reads them).")
ACCL_PARAM(ACCL_RAS_CLIENT_TIMEOUT_MS, Int, "1000",
           "A RAS client that has not sent its request and taken the whole answer within this many milliseconds is "
           "cut off.")
ACCL_PARAM(ACCL_CHECK_COLLECTIVES, Int, "0",
           "1: before each collective, ranks compare (function, count, datatype, op, root, sequence number) over the "
           "bootstrap and all fail with ncclInvalidUsage naming the rank(s) and fields that differ (a debug mode: one "
           "bootstrap all-gather per launch). Read when a communicator is created.")
