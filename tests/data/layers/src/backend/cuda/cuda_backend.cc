// Fixture: a backend reaching past the seam.
#include "core/comm.h"
