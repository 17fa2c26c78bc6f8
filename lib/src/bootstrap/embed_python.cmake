# Writes a C++ source that holds the bootstrap's Python files (see bootstrap.cmake).
# Usage: cmake -DSOURCE_DIR=<lib/src/bootstrap/python> -DOUTPUT=<file.cpp> -P embed_python.cmake
# Every byte is written as a \xHH escape, so any file content is a valid string literal.
file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*.py")
list(FILTER files EXCLUDE REGEX "__pycache__")
list(SORT files)
if(NOT files)
  message(FATAL_ERROR "embed_python: no .py files under ${SOURCE_DIR}")
endif()

set(arrays "")
set(table "")
set(index 0)
foreach(file IN LISTS files)
  file(READ "${SOURCE_DIR}/${file}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  set(literal "")
  set(offset 0)
  while(offset LESS hex_length)
    string(SUBSTRING "${hex}" ${offset} 96 chunk)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" chunk "${chunk}")
    string(APPEND literal "\n    \"${chunk}\"")
    math(EXPR offset "${offset} + 96")
  endwhile()
  if(literal STREQUAL "")
    set(literal " \"\"")
  endif()
  string(APPEND arrays "const char kFile${index}[] =${literal};\n")
  string(APPEND table "    {\"${file}\", {kFile${index}, sizeof(kFile${index}) - 1}},\n")
  math(EXPR index "${index} + 1")
endforeach()

set(source "// Generated from lib/src/bootstrap/python by lib/src/bootstrap/embed_python.cmake. Do not edit.
#include \"sprof/bootstrap.hpp\"

namespace sprof::bootstrap {
namespace {

${arrays}
const EmbeddedFile kFiles[] = {
${table}};

}  // namespace

std::span<const EmbeddedFile> python_files() { return kFiles; }

}  // namespace sprof::bootstrap
")
file(WRITE "${OUTPUT}.tmp" "${source}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
