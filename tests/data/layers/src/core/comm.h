// Fixture: the communicator.
#pragma once
