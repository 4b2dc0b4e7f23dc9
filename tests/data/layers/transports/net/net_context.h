// Fixture: a private network header.
#pragma once
