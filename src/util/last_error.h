// The process-wide "last error" text behind ncclGetLastError(). PyTorch's watchdog reads it
// from another thread after a call failed, so it is process-wide (not thread-local) and
// guarded by a lock; readers get a stable copy.
#pragma once

namespace accl {

// Replaces the stored message.
void setLastError(const char* message);

// For background threads (the network proxy): their warnings are no call's result, so from now
// on setLastError does nothing on the calling thread.
void keepLastErrorOnThisThread();

// Returns a pointer to a per-thread copy of the stored message, valid until this thread's
// next call. Never null; "" when no error was recorded.
const char* lastErrorText();

}  // namespace accl
