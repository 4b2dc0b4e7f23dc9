// Fixture: core naming a concrete transport.
#include "transports/net/net_context.h"
