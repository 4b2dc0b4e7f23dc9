// How the stand-in's files define the CUDA names they export: C linkage, default visibility (the
// library is compiled with hidden visibility; vgpu/libcudart.map then versions the names as
// libcudart.so.13 does).
#pragma once

#define VGPU_API extern "C" __attribute__((visibility("default")))
