// The RAS status server: one thread per process that answers accl-ras (tools/accl-ras) on a
// local TCP port with the text report of ras_report.h.
//
// Life: it starts with the process's first communicator and stops after the last one is freed
// (rasServerSync, which the activity registry, activity/ras_comms.h, calls on every add and remove
// once rasServerFollowComms asked it to). NCCL_RAS_ENABLE=0 turns it off. It listens on
// NCCL_RAS_ADDR (default localhost:28028); when that port is taken (another process of the job on
// this host, usually) it tries the next ports, up to ACCL_RAS_PORT_RANGE of them, and logs the one
// it got (INFO, subsystems INIT and RAS); when none is free it logs that and the library runs on
// without it.
//
// Protocol: the client connects and sends one line; the server answers and closes.
//   "STATUS"  -> the report (ras_report.h), plain text
//   "VERSION" -> "accl-ras protocol 1 library <version>"
//   anything else -> one line starting with "ERROR"
// Bounds: one client at a time; a client that has not sent its line and taken the whole answer
// within ACCL_RAS_CLIENT_TIMEOUT_MS is cut off.
//
// Encryption (util/tls_config.h): when the process encrypts, a client whose first byte opens a TLS
// record is served over TLS 1.3 with the process's key; a client in clear is served only when it
// comes from this host's loopback, and otherwise gets one line "ERROR encryption required ...". The thread takes no lock that a collective holds
// for long (only the table locks of the activity records, to copy a snapshot: ras_snapshot.h) and
// never blocks the library.
//
// Fork: a child process forgets the parent's server and communicators and starts its own server
// with its first communicator.
#pragma once

namespace accl {

// Has the activity registry call rasServerSync on every add and remove of a communicator. The API
// layer calls it before it creates one (src/api/comm_api.cc, comm_grow_api.cc); calling it again
// changes nothing.
void rasServerFollowComms();

// Starts the server when communicators exist and it is not running (and is enabled); stops it
// when none exist. Safe from any thread.
void rasServerSync();

// The port the server listens on, or 0 when it is not running.
int rasServerPort();

}  // namespace accl
