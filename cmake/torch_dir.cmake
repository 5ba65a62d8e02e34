# SPDX-License-Identifier: Apache-2.0
# LibTorch from a pip torch folder without its CMake package (MMTWIN_TORCH_DIR): the fallback of
# backend/gpu/run_on_gpu.sh when find_package(Torch) does not configure (a CUDA toolkit CMake cannot match, say).
# Sets what find_package(Torch) sets for the backend: Torch_FOUND, Torch_VERSION, TORCH_INCLUDE_DIRS,
# TORCH_LIBRARIES, TORCH_CXX_FLAGS.
set(root "${MMTWIN_TORCH_DIR}")
if(NOT EXISTS "${root}/include/ATen/ATen.h" OR NOT EXISTS "${root}/lib")
  message(FATAL_ERROR "MMTWIN_TORCH_DIR=${root}: not a torch folder (no include/ATen/ATen.h or lib/)")
endif()
file(STRINGS "${root}/include/torch/csrc/api/include/torch/version.h" version_line
     REGEX "define TORCH_VERSION \"")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" Torch_VERSION "${version_line}")
set(TORCH_INCLUDE_DIRS "${root}/include" "${root}/include/torch/csrc/api/include")
set(TORCH_LIBRARIES "${root}/lib/libtorch.so" "${root}/lib/libtorch_cpu.so" "${root}/lib/libc10.so")
if(MMTWIN_WITH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  list(APPEND TORCH_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS})
  # libtorch_cuda registers the CUDA kernels when loaded: linked even though no symbol of it is used directly.
  # --allow-shlib-undefined: the CUDA libraries libtorch_cuda needs are found at run time through its RUNPATH
  # (the nvidia-* wheels), not by the linker here.
  list(APPEND TORCH_LIBRARIES "-Wl,--no-as-needed,${root}/lib/libtorch_cuda.so" "-Wl,--as-needed"
       "${root}/lib/libc10_cuda.so" CUDA::cudart "-Wl,--allow-shlib-undefined")
endif()
# The C++ ABI the torch was built with (pip wheels since 2.7: the new one, as Debian's libraries).
find_program(MMTWIN_PYTHON NAMES python3 python)
set(abi 1)
if(MMTWIN_PYTHON)
  execute_process(COMMAND ${MMTWIN_PYTHON} -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
                  OUTPUT_VARIABLE abi_out RESULT_VARIABLE abi_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(abi_rc EQUAL 0)
    set(abi ${abi_out})
  endif()
endif()
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${abi}")
set(Torch_FOUND TRUE)
message(STATUS "LibTorch ${Torch_VERSION} from ${root} (without its CMake package; C++ ABI ${abi})")
