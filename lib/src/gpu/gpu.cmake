# libsprof_cupti.so: the library `record --gpu` gives the CUDA driver (CUDA_INJECTION64_PATH).
# It needs CUPTI's headers only: libcupti is found and loaded at run time (the one torch ships or
# the system's), never linked. SPROF_WITH_CUPTI: AUTO (build it when cupti.h is found), ON (fail
# without it), OFF.
set(SPROF_WITH_CUPTI AUTO CACHE STRING "Build libsprof_cupti.so for GPU tracing: AUTO, ON or OFF")
set_property(CACHE SPROF_WITH_CUPTI PROPERTY STRINGS AUTO ON OFF)

set(SPROF_CUPTI_INCLUDE_DIR "")
if(NOT SPROF_WITH_CUPTI STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_path(SPROF_CUPTI_HEADER_DIR cupti.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/include)
  if(SPROF_CUPTI_HEADER_DIR)
    set(SPROF_CUPTI_INCLUDE_DIR ${SPROF_CUPTI_HEADER_DIR})
  endif()
endif()

if(SPROF_CUPTI_INCLUDE_DIR)
  message(STATUS "sprof: CUPTI found (${SPROF_CUPTI_INCLUDE_DIR}/cupti.h): building libsprof_cupti.so for record --gpu")
  set(injection ${CMAKE_CURRENT_SOURCE_DIR}/src/gpu/injection)
  add_library(sprof_cupti SHARED ${injection}/injection.cpp
                                 ${injection}/cupti_library.cpp
                                 ${injection}/process_state.cpp
                                 ${injection}/activity_recorder.cpp
                                 ${injection}/activity_buffers.cpp
                                 ${injection}/record_converter.cpp
                                 ${injection}/activity_file_writer.cpp
                                 # the GPU activity file's chunk checksum (store's header-only format uses it)
                                 ${CMAKE_CURRENT_SOURCE_DIR}/src/store/codecs/crc32.cpp
                                 # kernel names, demangled as everywhere else
                                 ${CMAKE_CURRENT_SOURCE_DIR}/src/common/demangle.cpp)
  # The gpu stage's include tree (its own headers and store's private ones) and CUPTI's; nothing
  # of libsprof is linked.
  target_include_directories(sprof_cupti PRIVATE ${SPROF_STAGE_TREES}/gpu)
  target_include_directories(sprof_cupti SYSTEM PRIVATE ${SPROF_CUPTI_INCLUDE_DIR})
  target_link_libraries(sprof_cupti PRIVATE sprof_build_flags Threads::Threads sprof_llvm_demangle ${CMAKE_DL_LIBS})
  set_target_properties(sprof_cupti PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_compile_definitions(sprof_stage_gpu PRIVATE SPROF_CUPTI_LIBRARY_NAME="$<TARGET_FILE_NAME:sprof_cupti>")
  add_dependencies(sprof sprof_cupti)
  install(TARGETS sprof_cupti LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
elseif(SPROF_WITH_CUPTI STREQUAL "ON")
  message(FATAL_ERROR "SPROF_WITH_CUPTI=ON but cupti.h was not found (install the CUDA toolkit, or set CUDAToolkit_ROOT)")
else()
  message(STATUS "sprof: CUPTI not found: building without GPU tracing (record --gpu auto stays off)")
endif()
