// Fixture: a backend header.
#pragma once
