# sprof_stage_internal_sources(TABLE DIR): TABLE lists FILE:STAGE pairs, tests in DIR/FILE.cpp that
# read STAGE's internals; each is compiled against STAGE's include tree (lib/stages.cmake), so it
# sees that stage's private headers and those of the stages the stage uses, and no other.
function(sprof_stage_internal_sources table source_dir)
  foreach(entry IN LISTS table)
    string(REPLACE ":" ";" pair ${entry})
    list(GET pair 0 file)
    list(GET pair 1 stage)
    if(NOT EXISTS ${source_dir}/${file}.cpp)
      message(FATAL_ERROR "${source_dir}/${file}.cpp, named as a test of ${stage}'s internals, does not exist")
    endif()
    if(NOT IS_DIRECTORY ${PROJECT_BINARY_DIR}/lib/stages/${stage})
      message(FATAL_ERROR "${file}: ${stage} is not a stage (lib/stages.cmake)")
    endif()
    set_property(SOURCE ${source_dir}/${file}.cpp APPEND PROPERTY INCLUDE_DIRECTORIES
                 ${PROJECT_BINARY_DIR}/lib/stages/${stage})
  endforeach()
endfunction()
