// Fixture for scripts/layers-check.py: core reaching up into a backend.
#include "backend/host/host_wait.h"
