# Included from lib/CMakeLists.txt: compiles the bootstrap's Python files into libsprof and
# installs the `sprof` package (the explicit API) where the system python3 finds it.
set(SPROF_BOOTSTRAP_PYTHON_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/bootstrap/python)
file(GLOB_RECURSE SPROF_BOOTSTRAP_PYTHON_FILES CONFIGURE_DEPENDS ${SPROF_BOOTSTRAP_PYTHON_DIR}/*.py)
set(SPROF_BOOTSTRAP_EMBEDDED ${CMAKE_CURRENT_BINARY_DIR}/generated/bootstrap_python_files.cpp)
add_custom_command(
  OUTPUT ${SPROF_BOOTSTRAP_EMBEDDED}
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${SPROF_BOOTSTRAP_PYTHON_DIR} -DOUTPUT=${SPROF_BOOTSTRAP_EMBEDDED}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/src/bootstrap/embed_python.cmake
  DEPENDS ${SPROF_BOOTSTRAP_PYTHON_FILES} ${CMAKE_CURRENT_SOURCE_DIR}/src/bootstrap/embed_python.cmake
  COMMENT "Embedding the bootstrap's Python files"
  VERBATIM)
target_sources(sprof_stage_bootstrap PRIVATE ${SPROF_BOOTSTRAP_EMBEDDED})

# `import sprof` outside `sprof record` (a no-op there) needs the package on the interpreter's
# path: Debian's python3 reads <prefix>/lib/python3/dist-packages for prefix /usr and
# <prefix>/lib/python3.X/dist-packages for /usr/local. Under `sprof record` the embedded copy is
# used whatever is installed. sitecustomize.py is never installed: it would hijack every Python.
find_program(SPROF_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(sprof_python_dir lib/python3/dist-packages)
if(SPROF_SYSTEM_PYTHON3 AND NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  execute_process(COMMAND ${SPROF_SYSTEM_PYTHON3} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE sprof_python_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(sprof_python_version)
    set(sprof_python_dir lib/python${sprof_python_version}/dist-packages)
  endif()
endif()
set(SPROF_PYTHON_INSTALL_DIR ${sprof_python_dir} CACHE PATH
    "Where `make install` puts the sprof Python package (relative to the prefix, or absolute)")
install(DIRECTORY ${SPROF_BOOTSTRAP_PYTHON_DIR}/sprof DESTINATION ${SPROF_PYTHON_INSTALL_DIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
